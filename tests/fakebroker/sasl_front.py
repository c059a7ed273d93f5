"""The test SASL broker: a front that authenticates clients like a Kafka broker, then relays their requests to a real
broker (tansu, which cannot serve SASL itself) unchanged.

Rules:
- It answers SaslHandshake (v0-v1) and SaslAuthenticate (v0-v2) itself: PLAIN, and SCRAM-SHA-256/512 with the
  ``scramp`` package's *server* (not the client under test). Unknown user, wrong password or mechanism → Kafka's
  answers (error 58 with a message, error 33 with the enabled mechanisms).
- Before authentication only ApiVersions (relayed) and the SASL requests are allowed: anything else closes the
  connection, as Kafka does. With a session lifetime (KIP-368) it grants ``session_lifetime_ms`` and closes the
  connection on the first non-SASL request after the session expired; re-authenticating renews it.
- Relayed requests are pipelined: frames go to the broker as they come, responses come back in order. A SASL request
  is answered once every relayed request before it has been answered (Kafka answers in order).
- It prints one line per authentication (``auth <mechanism> <user> ok|failed``) to stdout, for the tests to count.
- Run as a program (the tests start it as a subprocess and stop it by its PID):
  ``python sasl_front.py --listen PORT --target PORT --users users.json [--lifetime-ms N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import struct
import time
from pathlib import Path

from scramp import ScramException, ScramMechanism

from bruce.wire.protocol import api_versions, sasl_authenticate, sasl_handshake
from bruce.wire.protocol.base import decode_request, encode_response

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_ITERATIONS = 4096
_HEADER = struct.Struct(">ihhi")  # size, api key, version, correlation id


class Users:
    """The credentials the front accepts: ``{user: password}``, with SCRAM auth info derived once per mechanism."""

    def __init__(self, passwords: dict[str, str]) -> None:
        self.passwords = passwords
        self.scram = {
            mechanism: {
                user: ScramMechanism(mechanism).make_auth_info(pw, iteration_count=SCRAM_ITERATIONS)
                for user, pw in passwords.items()
            }
            for mechanism in MECHANISMS[1:]
        }


class Session:
    """One client connection's SASL state."""

    def __init__(self, users: Users, lifetime_ms: int) -> None:
        self.users = users
        self.lifetime_ms = lifetime_ms
        self.mechanism: str | None = None
        self.server = None  # scramp server between the two SCRAM rounds
        self.user = ""
        self.authenticated = False
        self.expires = float("inf")

    def handshake(self, mechanism: str) -> sasl_handshake.SaslHandshakeResponse:
        if mechanism not in MECHANISMS:
            return sasl_handshake.SaslHandshakeResponse(33, MECHANISMS)
        self.mechanism = mechanism
        self.server = None
        return sasl_handshake.SaslHandshakeResponse(0, MECHANISMS)

    def authenticate(self, token: bytes) -> tuple[sasl_authenticate.SaslAuthenticateResponse, bool]:
        """The answer, and whether the connection stays open."""
        if self.mechanism is None:
            return self._fail("SaslAuthenticate before SaslHandshake", 34), False
        if self.mechanism == "PLAIN":
            parts = token.split(b"\0")
            user = parts[1].decode(errors="replace") if len(parts) == 3 else ""
            ok = len(parts) == 3 and self.users.passwords.get(user) == parts[2].decode(errors="replace")
            return self._done(user, ok, b"")
        auth_info = self.users.scram[self.mechanism]
        try:
            if self.server is None:

                def lookup(user: str):
                    self.user = user
                    if user not in auth_info:
                        raise ScramException("unknown user")
                    return auth_info[user]

                self.server = ScramMechanism(self.mechanism).make_server(lookup)
                self.server.set_client_first(token.decode())
                return sasl_authenticate.SaslAuthenticateResponse(
                    0, None, self.server.get_server_first().encode()
                ), True
            server, self.server = self.server, None
            server.set_client_final(token.decode())
            return self._done(self.user, True, server.get_server_final().encode())
        except (ScramException, UnicodeDecodeError):
            self.server = None
            return self._done(self.user, False, b"")

    def _done(self, user: str, ok: bool, final: bytes) -> tuple[sasl_authenticate.SaslAuthenticateResponse, bool]:
        mechanism, self.mechanism = self.mechanism, None
        print(f"auth {mechanism} {user} {'ok' if ok else 'failed'}", flush=True)
        if not ok:
            message = f"Authentication failed: invalid credentials with SASL mechanism {mechanism}"
            return self._fail(message, 58), False
        self.authenticated = True
        self.expires = time.monotonic() + self.lifetime_ms / 1000 if self.lifetime_ms else float("inf")
        return sasl_authenticate.SaslAuthenticateResponse(0, None, final, session_lifetime_ms=self.lifetime_ms), True

    @staticmethod
    def _fail(message: str, code: int) -> sasl_authenticate.SaslAuthenticateResponse:
        return sasl_authenticate.SaslAuthenticateResponse(code, message, b"")


class Front:
    def __init__(self, target: int, users: Users, lifetime_ms: int) -> None:
        self.target = target
        self.users = users
        self.lifetime_ms = lifetime_ms

    async def serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        session = Session(self.users, self.lifetime_ms)
        broker_r, broker_w = await asyncio.open_connection("127.0.0.1", self.target)
        outstanding = 0
        idle = asyncio.Event()
        idle.set()

        async def pump_back() -> None:
            nonlocal outstanding
            while True:
                head = await broker_r.readexactly(4)
                body = await broker_r.readexactly(struct.unpack(">i", head)[0])
                client_w.write(head + body)
                outstanding -= 1
                if outstanding <= 0:
                    outstanding = 0
                    idle.set()

        back = asyncio.create_task(pump_back())
        back.add_done_callback(lambda _: client_w.transport.abort())  # the broker hung up: so does the front
        try:
            while True:
                head = await client_r.readexactly(4)
                frame = await client_r.readexactly(struct.unpack(">i", head)[0])
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                if api_key in (sasl_handshake.KEY, sasl_authenticate.KEY):
                    await idle.wait()  # answer in order, after every relayed request before it
                    _, body = decode_request(frame)
                    if api_key == sasl_handshake.KEY:
                        answer, keep = session.handshake(body.mechanism), True
                    else:
                        answer, keep = session.authenticate(body.auth_bytes)
                    client_w.write(encode_response(answer, version=version, correlation_id=correlation_id))
                    await client_w.drain()
                    if not keep:
                        return
                    continue
                if api_key != api_versions.KEY and (not session.authenticated or time.monotonic() > session.expires):
                    print(f"closed: api {api_key} {'after expiry' if session.authenticated else 'unauthenticated'}",
                          flush=True)  # fmt: skip
                    return
                outstanding += 1
                idle.clear()
                broker_w.write(head + frame)
                await broker_w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            back.cancel()
            broker_w.transport.abort()
            client_w.transport.abort()


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--target", type=int, required=True)
    parser.add_argument("--users", type=Path, required=True)
    parser.add_argument("--lifetime-ms", type=int, default=0)
    args = parser.parse_args(argv)
    users = Users(json.loads(args.users.read_text()))
    front = Front(args.target, users, args.lifetime_ms)
    server = await asyncio.start_server(front.serve, "127.0.0.1", args.listen)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
