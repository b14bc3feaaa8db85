"""The Content-Security-Policy: on every page, with no inline script or style allowed, and no
template relying on one (an inline script, a style block or attribute, an event-handler
attribute, a javascript: URL), so the policy breaks nothing."""

import re
from pathlib import Path

import pytest
from django.test import Client

from config.csp import policy_with_sources

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_DIRS = [p for p in ROOT.glob("*/templates") if ".venv" not in p.parts] + [ROOT / "templates"]
INLINE = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I),
    "style block": re.compile(r"<style\b", re.I),
    "style attribute": re.compile(r"\sstyle\s*=", re.I),
    "event handler": re.compile(r"<[^>]+\son[a-z]+\s*=", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
}


def templates() -> list[Path]:
    found = sorted({p for d in TEMPLATE_DIRS for p in d.rglob("*.html")})
    assert len(found) >= 5, TEMPLATE_DIRS
    return found


@pytest.mark.parametrize("template", templates(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_needs_inline_script_or_style(template):
    text = template.read_text()
    assert [kind for kind, pattern in INLINE.items() if pattern.search(text)] == []


@pytest.mark.parametrize("path", ["/accounts/login/", "/", "/healthz", "/graphql"])
def test_every_response_carries_the_policy(db, user, path):
    client = Client()
    client.force_login(user)
    policy = client.get(path)["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"


def test_an_empty_setting_sends_no_header(db, settings):
    settings.CONTENT_SECURITY_POLICY = ""
    assert "Content-Security-Policy" not in Client().get("/accounts/login/")


def test_sources_are_added_to_their_directive_or_as_a_new_one():
    policy = "default-src 'self'; script-src 'self'"
    assert policy_with_sources(
        policy, {"script-src": "https://a.example", "style-src": "https://b.example"}
    ) == ("default-src 'self'; script-src 'self' https://a.example; style-src https://b.example")
