"""Every XML and TOML example in README.md and docs/*.md loads with the daemon's own loaders (a whole file as it is, a
fragment such as ``<kafka>`` or ``[[plog.listener]]`` inside a complete config, where it must change something), and
a config that is not well-formed XML is refused with the parser's position, the likely cause and the usual causes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from config_files import PER_TOPIC_CONF
from markdown_it import MarkdownIt

from bruce.proxy.config import Broker, Config, ConfigError, load_config_file, load_toml, load_xml, to_toml
from bruce.proxy.config.xml_config import USUAL_CAUSES

ROOT = Path(__file__).resolve().parents[3]
BROKERS = (Broker("kafka1", 9092),)


@dataclass(frozen=True)
class Example:
    where: str
    language: str
    text: str


def examples() -> list[Example]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for token in MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")):
            language = token.info.split()[0].lower() if token.type == "fence" and token.info.strip() else ""
            if language in ("xml", "toml") and token.map:
                found.append(Example(f"{page.relative_to(ROOT)}:{token.map[0] + 1}", language, token.content))
    return found


EXAMPLES = examples()
BASE_XML = PER_TOPIC_CONF.read_text()
BASE_TOML = to_toml(load_config_file(PER_TOPIC_CONF)).split("[[initial_brokers]]")[0]  # brokers given apart


def test_the_examples_are_found() -> None:
    wheres = {e.where.split(":")[0] for e in EXAMPLES}
    assert {"docs/configuration.md", "docs/security.md", "docs/plog.md"} <= wheres
    assert sum(e.language == "xml" and "<bruceConfig>" in e.text for e in EXAMPLES) >= 1
    assert sum(e.language == "toml" and "[batching]" in e.text for e in EXAMPLES) >= 1


def _load(example: Example) -> Config:
    if example.language == "xml":
        if "<bruceConfig>" in example.text:
            return load_xml(example.text, source=example.where)
        with_fragment = BASE_XML.replace("</bruceConfig>", example.text + "</bruceConfig>")
        config = load_xml(with_fragment, source=example.where)
        assert config != load_xml(BASE_XML), f"{example.where}: the fragment changed nothing"
        return config
    if "[batching]" in example.text:
        return load_toml(example.text, source=example.where, initial_brokers=())
    brokers = () if "initial_brokers" in example.text else BROKERS
    config = load_toml(BASE_TOML + "\n" + example.text, source=example.where, initial_brokers=brokers)
    assert config != load_toml(BASE_TOML, initial_brokers=BROKERS), f"{example.where}: the fragment changed nothing"
    return config


SECRET_FILE = "file:/etc/bruce/sasl-password"  # the examples' secrets, read at load time: stood in for here
SECRET_ENV = "BRUCE_SASL_PASSWORD"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_every_config_example_loads(example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "sasl-password"
    secret.write_text("s3cret\n")
    monkeypatch.setenv(SECRET_ENV, "s3cret")
    example = Example(example.where, example.language, example.text.replace(SECRET_FILE, f"file:{secret}"))
    try:
        config = _load(example)
    except ConfigError as error:
        pytest.fail(f"{example.where}: the ```{example.language} example does not load: {error}")
    assert config.initial_brokers


def _with(old: str, new: str) -> str:
    assert old in BASE_XML
    return BASE_XML.replace(old, new, 1)


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


BAD_XML = [
    ("dashes-in-comment", _with("<bruceConfig>", "<bruceConfig>\n    <!-- see --initial_brokers -->"), "dashes"),
    ("dashes-later-in-comment", _with("<bruceConfig>", "<bruceConfig>\n  <!-- one\n    two -- three -->"), "dashes"),
    ("bare-ampersand", _with('name="alerts" action', 'name="alerts&more" action'), "&"),
    ("bare-less-than", _with('name="alerts" action', 'name="alerts<more" action'), None),
    ("missing-closing-tag", _with("        </topicConfigs>\n    </batching>", "    </batching>"), "topicConfigs"),
    ("cut-short", BASE_XML[: BASE_XML.index("<compression>")], "bruceConfig"),
]


@pytest.mark.parametrize(("text", "cause"), [case[1:] for case in BAD_XML], ids=[case[0] for case in BAD_XML])
def test_not_well_formed_xml_names_the_position_the_likely_cause_and_the_usual_ones(
    text: str, cause: str | None
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_xml(text, source="bruce.xml")
    message = str(caught.value)
    assert re.match(r"bruce\.xml, line \d+: not well-formed XML: .+ \(column \d+\)", message), message
    assert USUAL_CAUSES in message and "`--` inside a comment" in USUAL_CAUSES and "&amp;" in USUAL_CAUSES
    if cause == "dashes":
        assert f"line {_line_of(text, 'two --') if 'two --' in text else _line_of(text, '--initial')}:" in message
        assert ": this comment holds `--` (the usual causes: " in message
    elif cause == "&":
        assert f"line {_line_of(text, '&more')}:" in message and ": an unescaped & (write &amp;)" in message
    elif cause is None:
        assert "; the usual causes: " in message
    else:
        opened = _line_of(text, f"<{cause}>")
        assert f": <{cause}> (line {opened}) is not closed (the usual causes: " in message


def test_configuration_md_shows_the_error_its_example_would_give_with_dashes_in_a_comment() -> None:
    """The page's main example, with an option name in a comment (as it once had), gives the error the page shows."""
    page = (ROOT / "docs" / "configuration.md").read_text()
    (main,) = [e for e in EXAMPLES if e.where.startswith("docs/configuration.md") and "<bruceConfig>" in e.text]
    broken = main.text.replace("optional when the command line names brokers", "optional with --initial_brokers")
    assert broken != main.text
    with pytest.raises(ConfigError) as caught:
        load_xml(broken, source="bruce.xml")
    shown = re.search(r"```text\n(bruce: bruce\.xml, line .+?)```", page, re.DOTALL)
    assert shown, "configuration.md should show the not-well-formed error"
    assert " ".join(shown.group(1).split()) == f"bruce: {caught.value}"
