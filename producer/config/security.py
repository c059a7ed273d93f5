"""Security settings (TLS and SASL) with librdkafka's names, their secrets, and the client TLS context.

Rules:
- :class:`SecurityConfig` holds librdkafka's properties (``security.protocol``, ``sasl.mechanism``, ``ssl.*``, ...)
  under their Python names; :data:`PROPERTIES` maps each dotted name to its field. Every value is checked at
  construction; a bad one raises :class:`ConfigError` naming the property.
- Secrets (``sasl.password``, ``ssl.key.password``) are :class:`Secret` values: given literally, as ``file:/path``
  (the file's first line) or as ``env:VAR``; resolved once at construction; their ``repr``/``str`` never show them.
  Errors about them name the property and the reference, never the value.
- TLS verifies the broker's certificate (system CAs, or ``ssl.ca.location``) and its host name unless told otherwise;
  ``enable.ssl.certificate.verification=false`` is for tests only and logs a warning each time a context is built.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scramp import ScramException
from scramp.utils import saslprep

from ..errors import ConfigError

log = logging.getLogger("bruce.producer.config.security")

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
REDACTED = "********"
MAX_SECRET_FILE = 64 * 1024
SECRETS = ("sasl.password", "ssl.key.password")  # never shown: redacted in reprs, logs, pages and converted configs


class Secret:
    """A password whose ``repr``/``str`` are redacted. ``reference`` is how it was given when that is not the secret
    itself (``file:/path``, ``env:VAR``), else None."""

    __slots__ = ("_value", "reference")

    def __init__(self, value: str, reference: str | None = None) -> None:
        self._value = value
        self.reference = reference

    @classmethod
    def parse(cls, name: str, text: Any) -> Secret:
        """``text`` as given in a configuration: a literal, ``file:/path`` or ``env:VAR``."""
        if isinstance(text, Secret):
            return text
        if not isinstance(text, str):
            raise ConfigError(f"{name}: must be a string (a literal, file:/path or env:VAR)")
        if text.startswith("file:"):
            path = Path(text[5:])
            try:
                with path.open("rb") as f:
                    data = f.read(MAX_SECRET_FILE + 1)
            except OSError as e:
                raise ConfigError(f"{name}: cannot read {text}: {e.strerror}") from None
            if len(data) > MAX_SECRET_FILE:
                raise ConfigError(f"{name}: {text} is larger than {MAX_SECRET_FILE} bytes")
            lines = data.decode("utf-8", "replace").splitlines()
            return cls(lines[0] if lines else "", text)
        if text.startswith("env:"):
            value = os.environ.get(text[4:])
            if value is None:
                raise ConfigError(f"{name}: environment variable {text[4:]} is not set")
            return cls(value, text)
        return cls(text)

    def reveal(self) -> str:
        """The secret itself: only for the authentication that needs it."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({self.reference or REDACTED})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value and other.reference == self.reference

    def __hash__(self) -> int:
        return hash((self._value, self.reference))


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """How to reach brokers: ``security_protocol`` and the SASL and TLS settings it needs (librdkafka's meaning)."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "PLAIN"
    sasl_username: str = ""
    sasl_password: Secret | None = None
    ssl_ca_location: str = ""  # PEM file or directory; "" = the system's CAs
    ssl_certificate_location: str = ""  # client certificate (mTLS)
    ssl_key_location: str = ""
    ssl_key_password: Secret | None = None
    ssl_endpoint_identification_algorithm: str = "https"  # "https": the host name must match; "none"
    enable_ssl_certificate_verification: bool = True  # false: tests only

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        protocol = str(self.security_protocol).upper()
        set_(self, "security_protocol", protocol)
        if protocol not in SECURITY_PROTOCOLS:
            choices = ", ".join(SECURITY_PROTOCOLS)
            raise ConfigError(f"security.protocol: {self.security_protocol!r} is not one of {choices}")
        mechanism = str(self.sasl_mechanism).upper()
        set_(self, "sasl_mechanism", mechanism)
        if mechanism not in SASL_MECHANISMS:
            raise ConfigError(f"sasl.mechanism: {self.sasl_mechanism!r} is not one of {', '.join(SASL_MECHANISMS)}")
        for name in ("sasl_password", "ssl_key_password"):
            value = getattr(self, name)
            if value is not None:
                set_(self, name, Secret.parse(name.replace("_", "."), value))
        for name in ("sasl_username", "ssl_ca_location", "ssl_certificate_location", "ssl_key_location"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{_dotted(name)}: must be a string")
        algorithm = str(self.ssl_endpoint_identification_algorithm).lower()
        set_(self, "ssl_endpoint_identification_algorithm", algorithm)
        if algorithm not in ("https", "none"):
            raise ConfigError(f"ssl.endpoint.identification.algorithm: {algorithm!r} is not https or none")
        verify: object = self.enable_ssl_certificate_verification  # as given: a str from a configuration file too
        if isinstance(verify, str) and verify.lower() in ("true", "false"):
            set_(self, "enable_ssl_certificate_verification", verify.lower() == "true")
        elif not isinstance(verify, bool):
            raise ConfigError(f"enable.ssl.certificate.verification: {verify!r} must be true or false")
        if self.sasl:
            if not self.sasl_username:
                raise ConfigError(f"sasl.username: required with security.protocol={protocol}")
            if self.sasl_password is None:
                raise ConfigError(f"sasl.password: required with security.protocol={protocol}")
            _check_credentials(mechanism, self.sasl_username, self.sasl_password.reveal())
        if self.ssl_key_location and not self.ssl_certificate_location:
            raise ConfigError("ssl.key.location: needs ssl.certificate.location")

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> SecurityConfig:
        """From librdkafka's dotted names (or field names); ``sasl.mechanisms`` is an alias of ``sasl.mechanism``."""
        kwargs = {}
        for key, value in settings.items():
            name = PROPERTIES.get(key) or (key if key in _FIELDS else None)
            if name is None:
                raise ConfigError(f"unknown security property {key!r}")
            kwargs[name] = value
        return cls(**kwargs)

    def settings(self) -> dict[str, Any]:
        """The non-default settings by librdkafka name, as values :meth:`from_mapping` takes (secrets as
        :class:`Secret`: still redacted)."""
        return {
            _dotted(f.name): getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        }

    def properties(self) -> dict[str, Any]:
        """The non-default settings by librdkafka name, secrets as given by reference or redacted (for display)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            out[_dotted(f.name)] = (value.reference or REDACTED) if isinstance(value, Secret) else value
        return out

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client TLS context (None without TLS); a file that cannot be loaded is a :class:`ConfigError`."""
        if not self.tls:
            return None
        try:
            if self.ssl_ca_location and Path(self.ssl_ca_location).is_dir():
                context = ssl.create_default_context(capath=self.ssl_ca_location)
            else:
                context = ssl.create_default_context(cafile=self.ssl_ca_location or None)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"ssl.ca.location: cannot load {self.ssl_ca_location}: {e}") from None
        if self.ssl_certificate_location:
            password = self.ssl_key_password.reveal() if self.ssl_key_password is not None else None
            try:
                context.load_cert_chain(self.ssl_certificate_location, self.ssl_key_location or None, password)
            except (OSError, ssl.SSLError) as e:
                detail = getattr(e, "strerror", None) or getattr(e, "reason", None) or type(e).__name__
                raise ConfigError(
                    f"ssl.certificate.location/ssl.key.location: cannot load {self.ssl_certificate_location} ({detail})"
                ) from None
        if self.ssl_endpoint_identification_algorithm == "none" or not self.enable_ssl_certificate_verification:
            context.check_hostname = False
        if not self.enable_ssl_certificate_verification:
            context.verify_mode = ssl.CERT_NONE
            log.warning("enable.ssl.certificate.verification=false: broker certificates are NOT verified (tests only)")
        return context


def _check_credentials(mechanism: str, username: str, password: str) -> None:
    """Credentials the mechanism can carry: no NUL for PLAIN (its separator), SASLprep's rules for SCRAM (RFC 4013:
    no control characters, nothing unassigned). The password is never shown."""
    for name, value in (("sasl.username", username), ("sasl.password", password)):
        if mechanism == "PLAIN":
            bad = "\0" in value
        else:
            try:
                saslprep(value)
                bad = False
            except ScramException:
                bad = True
        if bad:
            what = "a NUL character" if mechanism == "PLAIN" else "a character SASLprep forbids (a control character?)"
            raise ConfigError(f"{name}: holds {what}, which {mechanism} cannot send")


PLAINTEXT = SecurityConfig()  # the default: no TLS, no SASL


@functools.lru_cache(maxsize=8)
def client_context(security: SecurityConfig) -> ssl.SSLContext | None:
    """:meth:`SecurityConfig.ssl_context`, built once per configuration (loading CAs costs milliseconds)."""
    return security.ssl_context()


_FIELDS = {f.name for f in dataclasses.fields(SecurityConfig)}


def _dotted(name: str) -> str:
    return name.replace("_", ".")


PROPERTIES: dict[str, str] = {_dotted(name): name for name in _FIELDS} | {"sasl.mechanisms": "sasl_mechanism"}
