"""The abuse limits as an attacker meets them: a real gunicorn process with the production
settings (defaults as shipped), 10,000 mutations over one token and 1,000 wrong passwords for
one account, each in a bounded loop. Throttled with typed errors, never a 500, memory flat."""

import http.client
import json
import re
from pathlib import Path

import pytest

from tests.production_server import production_server

MUTATIONS = 10_000
WRONG_PASSWORDS = 1_000
MARK = json.dumps({"query": "mutation { markNotificationsRead { marked } }"}).encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("abuse")
    with production_server(workdir) as running:
        password = "correct horse battery staple 42"
        running.manage("createuser", "mallory", "--password-env", "PW", env={"PW": password})
        running.token = running.manage("createapitoken", "mallory").stdout.strip()
        running.password = password
        yield running


def worker_rss_kib(master_pid: int) -> int:
    """Resident memory of gunicorn's (single) worker process."""
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    status = Path(f"/proc/{children[0]}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))


def post_mutation(connection: http.client.HTTPConnection, token: str) -> tuple[int, dict, str | None]:
    connection.request(
        "POST",
        "/graphql",
        body=MARK,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    response = connection.getresponse()
    return response.status, json.loads(response.read()), response.getheader("Retry-After")


def test_ten_thousand_mutations_over_a_token_are_throttled_with_flat_memory(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    statuses: dict[int, int] = {}
    codes: set[str] = set()
    retry_after: set[str | None] = set()
    rss = []
    for index in range(MUTATIONS):
        status, body, retry = post_mutation(connection, server.token)
        statuses[status] = statuses.get(status, 0) + 1
        if status == 429:
            codes.add(body["errors"][0]["extensions"]["code"])
            retry_after.add(retry)
        if index in (1_000, MUTATIONS - 1):
            rss.append(worker_rss_kib(server.process.pid))
    connection.close()
    assert set(statuses) <= {200, 429}, statuses
    # the default rate (120 a minute) let some through and throttled the rest
    assert 120 <= statuses[200] <= 480 and statuses[429] >= MUTATIONS - 480, statuses
    assert codes == {"rate_limited"} and None not in retry_after
    growth_mib = (rss[1] - rss[0]) / 1024
    assert growth_mib < 16, f"worker grew {growth_mib:.1f} MiB over {MUTATIONS - 1_000} requests"


def test_a_thousand_wrong_passwords_lock_the_account_out_never_a_500(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.request("GET", "/accounts/login/")
    page = connection.getresponse()
    cookie = re.search(r"csrftoken=([^;]+)", page.getheader("Set-Cookie")).group(1)
    form_token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.read()).group(1).decode()

    def sign_in(password: str) -> tuple[int, bytes]:
        body = f"csrfmiddlewaretoken={form_token}&username=mallory&password={password}"
        connection.request(
            "POST",
            "/accounts/login/",
            body=body.encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={cookie}"},
        )
        response = connection.getresponse()
        return response.status, response.read()

    statuses = [sign_in(f"wrong-{i}")[0] for i in range(WRONG_PASSWORDS)]
    assert 500 not in statuses
    first_lock = statuses.index(429)
    assert first_lock == 9  # the tenth wrong password locks (LOGIN_FAILURE_LIMIT 10)
    assert set(statuses[:first_lock]) == {200} and set(statuses[first_lock:]) == {429}
    status, page_body = sign_in(server.password.replace(" ", "+"))  # the right one, form-encoded
    connection.close()
    assert status == 429 and b"Signing in is paused" in page_body


def test_a_form_upload_of_more_files_than_allowed_gets_a_page_with_its_code(server):
    # given a signed-in user with a corpus (Django reads the body for the CSRF check, before any
    # view, and refuses the 101st file there)
    server.manage("createuser", "uploader", "--password-env", "PW", env={"PW": "uploader pass 42"})
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.request("GET", "/accounts/login/")
    page = connection.getresponse()
    csrf = re.search(r"csrftoken=([^;]+)", page.getheader("Set-Cookie")).group(1)
    form_token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.read()).group(1).decode()
    connection.request(
        "POST",
        "/accounts/login/",
        body=f"csrfmiddlewaretoken={form_token}&username=uploader&password=uploader+pass+42".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf}"},
    )
    signed_in = connection.getresponse()
    signed_in.read()
    session = re.search(r"sessionid=([^;]+)", signed_in.getheader("Set-Cookie")).group(1)
    cookies = f"csrftoken={csrf}; sessionid={session}"
    connection.request(
        "POST",
        "/corpora/new/",
        body=f"csrfmiddlewaretoken={form_token}&name=Contracts".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookies},
    )
    created = connection.getresponse()
    created.read()
    corpus_page = created.getheader("Location")
    assert created.status == 302 and re.fullmatch(r"/corpora/\d+/", corpus_page)
    # when 101 files are posted through the upload form
    boundary = "deepcite-boundary"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{form_token}\r\n'
    ]
    parts += [
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="f{i}.md"\r\n'
        f"Content-Type: text/markdown\r\n\r\nNotice is in writing.\r\n"
        for i in range(101)
    ]
    body = ("".join(parts) + f"--{boundary}--\r\n").encode()
    connection.request(
        "POST",
        f"{corpus_page}upload/",
        body=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}", "Cookie": cookies},
    )
    refused = connection.getresponse()
    text = refused.read().decode()
    connection.close()
    # then a page says what was wrong, with its code
    assert refused.status == 400
    assert "An upload is at most 100 files at a time. (too_many_files)" in text
