"""The front page's links and controls: every page, the "Update Metadata" form, and the message debug commands, each
said in words.

Rules:
- Bruce's names and forms: the pages in ``/plain`` and ``/json``; ``POST /metadata_update`` behind an "Update
  Metadata" button; the message debug commands that change state (``add_all_topics``, ``del_all_topics``,
  ``truncate_files``) as buttons (GET forms, as Bruce's page has them), ``get_topics`` as a link, the per-topic
  commands as addresses to open. Each command is explained beside it; the message debug section has a heading of its
  own, apart from the server's management.
- Static text: no value of the daemon, so no digit (the dashboard's rule: every number is a value with provenance).
"""

from __future__ import annotations

from html import escape

from .pages import MSG_DEBUG_COMMANDS, PAGE_TITLES, PAGES

__all__ = ["controls"]

DEBUG_MEANINGS = {
    "add_all_topics": "start writing the messages of every topic",
    "del_all_topics": "stop writing them",
    "truncate_files": "empty the three files",
}


def _button(action: str, label: str, method: str = "get") -> str:
    return f'<form action="{action}" method="{method}"><div><input type="submit" value="{label}"/></div></form>'


def controls(*, metrics: bool) -> str:
    """The page's last sections: links to every page, server management, message debug."""
    links = "\n".join(
        f'          <li>{escape(PAGE_TITLES[page])}: <a href="/{page}/plain">plain</a> · '
        f'<a href="/{page}/json">JSON</a></li>'
        for page in PAGES
    )
    if metrics:
        links += '\n          <li>Prometheus: <a href="/metrics">metrics</a></li>'
    debug_rows = "\n".join(
        f"            <tr><td>{_button(f'/msg_debug/{cmd}', cmd)}</td><td>{DEBUG_MEANINGS[cmd]}</td></tr>"
        for cmd in MSG_DEBUG_COMMANDS
        if cmd != "get_topics"
    )
    return f"""    <div class="cols">
      <section>
        <h2>Pages</h2>
        <ul>
{links}
        </ul>
      </section>
      <section>
        <h2>Server management</h2>
        {_button("/metadata_update", "Update Metadata", "post")}
        <p class="muted">Ask Kafka for its metadata now (brokers, topics, partition leaders) instead of at the next
          refresh.</p>
      </section>
    </div>
    <section class="debug">
      <h2>Message debug files</h2>
      <p class="muted">For following messages through the daemon: while on, each message of the chosen topics is
        written to three files in the daemon's debug directory (<code>msg_receive</code>, <code>msg_send</code>,
        <code>msg_got_ack</code>), contents included, until <code>--msg_debug_time_limit</code> or
        <code>--msg_debug_byte_limit</code> ends the session. Bruce's commands:</p>
      <table>
        <tbody>
            <tr><td><a href="/msg_debug/get_topics">get_topics</a></td><td>which topics are being written</td></tr>
{debug_rows}
            <tr><td><code>/msg_debug/add_topic/&lt;topic&gt;</code><br/><code>/msg_debug/del_topic/&lt;topic&gt;</code></td>
              <td>start or stop one topic (open the address with the topic's name)</td></tr>
        </tbody>
      </table>
    </section>"""
