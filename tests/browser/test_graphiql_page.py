"""GraphiQL in a real browser under the site's Content-Security-Policy: the editor starts (its
settings read from data attributes, no inline script), and a query typed into it runs against
/graphql; any policy violation is a console error, which fails the test (tests/browser/conftest.py)."""

import pytest

from config.graphql import view as graphql_view
from tests.browser.helpers import BROWSER_TEST, sign_in

pytestmark = BROWSER_TEST


@pytest.fixture
def graphiql_on(settings):
    settings.GRAPHIQL = True
    graphql_view._graphiql_local.cache_clear()
    yield
    graphql_view._graphiql_local.cache_clear()


def test_graphiql_runs_a_query_under_the_policy(live_server, graphiql_on, browser_page):
    page = browser_page
    sign_in(page, live_server.url)
    response = page.goto(f"{live_server.url}/graphql")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".graphiql-container")
    assert page.evaluate("window.GRAPHENE_SETTINGS.graphiqlHeaderEditorEnabled") is True
    editor = page.locator(".graphiql-query-editor .CodeMirror").first
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("{ corpora { edges { node { name } } }")
    with page.expect_response(lambda r: r.url.endswith("/graphql") and r.request.method == "POST") as answer:
        page.click("button.graphiql-execute-button")
    assert answer.value.json() == {"data": {"corpora": {"edges": []}}}
