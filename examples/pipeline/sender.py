"""The pipeline's producer side: page-view events written as datagrams to the local bruce daemon.

Each event is a JSON value with the page as the Kafka key, sent with ``send_partition_key`` on the user id (Bruce's
PartitionKey: one user's events stay in one partition, in order). Timestamps are spread evenly over the last
``--minutes`` minutes, so the counts fall into several one-minute windows.

    python examples/pipeline/sender.py --socket /tmp/bruce.sock --topic page-views --events 2000
"""

from __future__ import annotations

import argparse
import json
import time

from bruce.client import BruceClient

PAGES = ("/", "/docs", "/pricing", "/blog", "/signup")


def send_events(socket_path: str, topic: str, events: int, minutes: int = 3) -> dict[tuple[str, int], int]:
    """Send ``events`` page views; returns how many each (page, minute start in epoch ms) got."""
    now = time.time_ns() // 1_000_000
    span = minutes * 60_000
    sent: dict[tuple[str, int], int] = {}
    with BruceClient(socket_path, timeout=30) as bruce:  # a full socket queue is waited out, 30 s at most per event
        for i in range(events):
            user = i * 7919 % 97
            page = PAGES[(i * 31 + user) % len(PAGES)]
            timestamp = now - span + span * i // events
            value = json.dumps({"user": user, "page": page, "n": i}).encode()
            bruce.send_partition_key(topic, user, value, key=page.encode(), timestamp=timestamp)
            minute = timestamp - timestamp % 60_000
            sent[(page, minute)] = sent.get((page, minute), 0) + 1
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="the daemon's input socket (--receive_socket_name)")
    parser.add_argument("--topic", default="page-views")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--minutes", type=int, default=3)
    args = parser.parse_args()
    sent = send_events(args.socket, args.topic, args.events, args.minutes)
    print(f"sent {sum(sent.values())} events to {args.topic} through {args.socket}")


if __name__ == "__main__":
    main()
