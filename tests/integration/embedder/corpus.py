"""A small labelled corpus: a repository whose answer chunk for each query is known.

Queries are phrased as a person would ask, with inflected words ("emails", "passwords",
"thumbnails") where the code says "email", "password", "thumbnail": PostgreSQL's ``simple``
configuration does not stem, so lexical search misses some of them, while a vector of character
trigrams (the fake server's embeddings) still sees the overlap. Generated filler modules make the
top-10 cut mean something.
"""

from __future__ import annotations

import random

FILES: dict[str, str] = {
    "src/billing/invoice.py": '''"""Invoices."""


def compute_invoice_total(lines):
    """Add up the amounts of an invoice's lines, with tax."""
    return sum(line.amount * (1 + line.tax_rate) for line in lines)


def void_invoice(invoice):
    invoice.status = "void"
    return invoice
''',
    "src/notify/mailer.py": '''"""Outgoing mail."""


def send_welcome_email(user, smtp):
    """Greet a newly registered user."""
    smtp.send(to=user.address, subject="Welcome aboard", body=render_welcome(user))


def render_welcome(user):
    return f"Hello {user.display_name}, glad to have you."
''',
    "src/auth/password.py": '''"""Credential storage."""
import hashlib


def hash_password(password, salt):
    """Derive a slow salted digest of a password with PBKDF2."""
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 600_000)


def verify_password(password, salt, expected):
    return hash_password(password, salt) == expected
''',
    "src/http/throttle.py": '''"""Per-client request throttling."""
import time


class TokenBucket:
    """Refill a client's bucket over time; refuse a request when it is empty."""

    def __init__(self, rate, burst):
        self.rate, self.burst, self.tokens, self.stamp = rate, burst, burst, time.monotonic()

    def allow(self):
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
''',
    "src/media/thumbnail.py": '''"""Image previews."""


def make_thumbnail(image, width=128):
    """Shrink an image to a preview keeping its aspect ratio."""
    ratio = width / image.width
    return image.resize((width, int(image.height * ratio)))
''',
    "src/export/csv_writer.py": '''"""Spreadsheet export."""
import csv


def export_orders_csv(orders, handle):
    """Write one row per order with its customer and total."""
    writer = csv.writer(handle)
    writer.writerow(["order", "customer", "total"])
    for order in orders:
        writer.writerow([order.number, order.customer, order.total])
''',
    "src/config/loader.py": '''"""Settings from the environment."""
import os


def load_settings(prefix="APP_"):
    """Collect environment variables that start with the prefix into a dictionary."""
    return {k[len(prefix):].lower(): v for k, v in os.environ.items() if k.startswith(prefix)}
''',
    "src/dates/parse.py": '''"""Date handling."""
from datetime import datetime


def parse_timestamp(text):
    """Read an ISO 8601 timestamp, accepting a trailing Z for UTC."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
''',
    "src/cache/lru.py": '''"""Memoisation."""
from collections import OrderedDict


class LeastRecentlyUsedCache:
    """Keep the most recently used entries; evict the oldest beyond capacity."""

    def __init__(self, capacity):
        self.capacity, self.entries = capacity, OrderedDict()

    def get(self, key):
        value = self.entries.pop(key)
        self.entries[key] = value
        return value

    def put(self, key, value):
        self.entries[key] = value
        if len(self.entries) > self.capacity:
            self.entries.popitem(last=False)
''',
    "src/jobs/retry.py": '''"""Background jobs."""
import time


def retry_with_backoff(task, attempts=5, base=0.5):
    """Run a task again after failures, waiting longer each time."""
    for attempt in range(attempts):
        try:
            return task()
        except Exception:
            time.sleep(base * 2 ** attempt)
    return task()
''',
    "docs/deploy.md": """# Deploying

Build the container image, push it to the registry, then roll the deployment forward.
Rollbacks restore the previous image tag.
""",
    "src/search/tokenize.py": '''"""Search helpers."""


def split_identifiers(text):
    """Break camelCase and snake_case names into lowercase words."""
    words = []
    for part in text.replace("_", " ").split():
        current = ""
        for ch in part:
            if ch.isupper() and current:
                words.append(current.lower())
                current = ch
            else:
                current += ch
        words.append(current.lower())
    return words
''',
}

# (query, path of the answer, name of the answer chunk)
QUERIES: list[tuple[str, str, str]] = [
    ("compute invoice total", "src/billing/invoice.py", "compute_invoice_total"),
    ("sending welcome emails to new users", "src/notify/mailer.py", "send_welcome_email"),
    ("hashing passwords with salts", "src/auth/password.py", "hash_password"),
    ("token buckets for throttling clients", "src/http/throttle.py", "TokenBucket"),
    ("thumbnails of images", "src/media/thumbnail.py", "make_thumbnail"),
    ("exporting orders as csv rows", "src/export/csv_writer.py", "export_orders_csv"),
    ("loading settings from environment variables", "src/config/loader.py", "load_settings"),
    ("parsing timestamps", "src/dates/parse.py", "parse_timestamp"),
    ("least recently used caches evicting entries", "src/cache/lru.py", "LeastRecentlyUsedCache"),
    ("retrying failed tasks with backoff", "src/jobs/retry.py", "retry_with_backoff"),
    ("rollbacks of deployments", "docs/deploy.md", "Deploying"),
    ("splitting identifiers into words", "src/search/tokenize.py", "split_identifiers"),
]

_VOCAB = [
    "account",
    "audit",
    "batch",
    "buffer",
    "channel",
    "client",
    "cluster",
    "column",
    "counter",
    "cursor",
    "digest",
    "dispatch",
    "document",
    "draft",
    "element",
    "engine",
    "event",
    "field",
    "filter",
    "format",
    "gateway",
    "handler",
    "header",
    "index",
    "journal",
    "ledger",
    "listener",
    "manifest",
    "matrix",
    "message",
    "metric",
    "module",
    "node",
    "offset",
    "packet",
    "page",
    "parser",
    "payload",
    "pipeline",
    "policy",
    "pool",
    "profile",
    "queue",
    "record",
    "region",
    "registry",
    "report",
    "request",
    "resource",
    "route",
    "schema",
    "segment",
    "session",
    "shard",
    "signal",
    "snapshot",
    "socket",
    "source",
    "stream",
    "table",
    "tenant",
    "ticket",
    "timer",
    "topic",
    "trace",
    "vector",
    "version",
    "window",
    "worker",
]


def filler(count: int = 60, seed: int = 7) -> dict[str, str]:
    """Distractor modules built from a fixed vocabulary (deterministic)."""
    rnd = random.Random(seed)
    files: dict[str, str] = {}
    for i in range(count):
        a, b, c = rnd.sample(_VOCAB, 3)
        body = " ".join(rnd.sample(_VOCAB, 8))
        files[f"src/misc/{a}_{b}_{i}.py"] = (
            f'"""{a.title()} {b} utilities."""\n\n\n'
            f"def {a}_{b}_{c}(value):\n"
            f'    """Handle the {a} {b} for a {c}: {body}."""\n'
            f"    return value\n\n\n"
            f"def {b}_{c}_{i}(items):\n"
            f'    """Combine {b} and {c} items."""\n'
            f"    return [item for item in items if item]\n"
        )
    return files


def repository_files() -> dict[str, str]:
    return {**FILES, **filler()}
