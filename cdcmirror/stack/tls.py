"""The secured Kafka listener of the local stack: a private CA and the broker's certificate
(made with ``openssl`` once, kept in the stack directory) and the SCRAM user its clients log
in as.

The user and password are the local stack's own, like the S3 store's keys and the sources'
development passwords: a production broker has its own, given to cdcmirror through
``[kafka] sasl_username`` and ``sasl_password`` (or ``sasl_password_file``, ``config/files.py``)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from cdcmirror.exceptions import StackError

SCRAM_USER = "cdcmirror"
SCRAM_PASSWORD = "cdcmirror-local-only"
SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 8192
DAYS = 3650


def ca_file(tls_dir: Path) -> Path:
    """The CA certificate clients trust (PEM)."""
    return tls_dir / "ca.pem"


def keystore_file(tls_dir: Path) -> Path:
    """The broker's key and certificate chain in one PEM file (Kafka's PEM key store)."""
    return tls_dir / "broker-keystore.pem"


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise StackError(f"openssl {args[0]} failed: {proc.stderr.strip()[-500:]}")


def ensure_certificates(tls_dir: Path) -> Path:
    """Make the CA and the broker's certificate (for 127.0.0.1 and localhost) unless both
    exist; returns the key store. The CA's key is thrown away once it has signed: nothing
    else is ever signed with it."""
    keystore = keystore_file(tls_dir)
    if keystore.is_file() and ca_file(tls_dir).is_file():
        return keystore
    if shutil.which("openssl") is None:
        raise StackError(
            "no openssl found: the stack's SASL_SSL listener needs it to make its "
            "certificates (Debian: apt-get install openssl)"
        )
    tls_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tls_dir) as tmp:
        work = Path(tmp)
        (work / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", str(DAYS), "-subj", "/CN=cdcmirror local stack CA",
            cwd=work,
        )  # fmt: skip
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key",
            "-out", "broker.csr", "-subj", "/CN=127.0.0.1",
            cwd=work,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "broker.crt", "-days", str(DAYS),
            "-extfile", "ext.cnf",
            cwd=work,
        )  # fmt: skip
        parts = [(work / n).read_text() for n in ("broker.key", "broker.crt", "ca.pem")]
        staged = work / "keystore.pem"
        staged.write_text("".join(parts))
        staged.chmod(0o600)
        (work / "ca.pem").replace(ca_file(tls_dir))
        staged.replace(keystore)  # last: its presence means both are there
    return keystore
