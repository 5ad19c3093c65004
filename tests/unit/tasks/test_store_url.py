"""store_url: which values name a server, and how a store is shown (never its password)."""
from __future__ import annotations

import pytest

from ralphpy.tasks import store_url


@pytest.mark.parametrize("value, scheme", [
    ("postgresql://u@h/db", "postgresql"), ("POSTGRES://u@h/db", "postgres"),
    ("mysql://x", "mysql"), ("tasks.db", None), (".ralph/tasks.db", None),
    ("C:\\tasks.db", None), ("dir/postgresql://x", None), ("://x", None)])
def test_scheme_is_the_part_before_colon_slash_slash(value, scheme):
    assert store_url.scheme(value) == scheme
    assert store_url.is_postgres(value) == (scheme in ("postgresql", "postgres"))


@pytest.mark.parametrize("text, shown", [
    ("postgresql://u:secret@h:5432/db", "postgresql://u:***@h:5432/db"),
    ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),          # an unencoded "@"
    ("postgresql://u@h/db?password=secret&sslmode=require",
     "postgresql://u@h/db?password=***&sslmode=require"),
    ("postgresql://u@/db?host=/tmp/s", "postgresql://u@/db?host=/tmp/s"),
    ("could not connect: postgresql://a:b@h/d: refused", "could not connect: postgresql://a:***@h/d: refused"),
    ("host=h password=secret dbname=d", "host=h password=*** dbname=d"),
    ("tasks.db", "tasks.db")])
def test_redact_hides_every_password(text, shown):
    assert store_url.redact(text) == shown
    assert "secret" not in store_url.redact(text)
