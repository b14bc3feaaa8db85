"""The `deepcite` command: start, follow, list and cancel research runs on a Deepcite server."""

import argparse
import base64
import os
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli import queries
from cli.client import CliError, GraphQLClient, UsageError, global_id
from cli.constants import (
    DEFAULT_LIST_SIZE,
    DEFAULT_POLL_SECONDS,
    DEPTHS,
    ENV_TOKEN,
    ENV_URL,
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_TIMED_OUT,
    PAGE_SIZE_MAX,
    POLL_TRANSIENT_RETRIES,
    TERMINAL_STATUSES,
    UPLOAD_BATCH_BYTES,
    UPLOAD_BATCH_FILES,
    UPLOAD_SUFFIXES,
)
from cli.output import (
    Output,
    ProgressView,
    corpora_table,
    corpus_json,
    report_json,
    report_list_json,
    reports_table,
    uploads_table,
)

Command = Callable[[GraphQLClient, argparse.Namespace, Output], int]

CORPUS_HELP = "a corpus: its id as `deepcite corpora` prints it, its number, or its name"

EPILOG = f"""\
connection: --url/--token, or the {ENV_URL} and {ENV_TOKEN} environment variables.
exit codes: 0 done, 1 failed (or cancelled, or an API error), 2 usage error, 3 timed out."""


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "task_id_only", False) and (args.json or args.output):
        parser.error(
            "--task-id-only prints only the report id; it cannot be combined with --json or --output"
        )
    output = Output()
    try:
        client = _client(args)
        return args.handler(client, args, output)
    except CliError as error:
        output.error(error.code, error.message)
        return error.exit_code
    except KeyboardInterrupt:
        output.note("deepcite: interrupted")
        return EXIT_INTERRUPTED


def build_parser() -> argparse.ArgumentParser:
    # SUPPRESS keeps a subcommand from overwriting --url/--token given before it.
    connection = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    connection.add_argument("--url", help=f"the server, e.g. http://127.0.0.1:8000 (default: ${ENV_URL})")
    connection.add_argument("--token", help=f"an API token, dc_… (default: ${ENV_TOKEN})")

    waiting = argparse.ArgumentParser(add_help=False)
    waiting.add_argument("--json", action="store_true", help="print the report as one JSON object")
    waiting.add_argument(
        "--output", metavar="FILE", type=Path, help="also write the report's markdown to FILE"
    )
    waiting.add_argument(
        "--timeout",
        metavar="S",
        type=_positive_float,
        help="stop waiting after S seconds (exit 3); the server run goes on (default: wait to the end)",
    )
    waiting.add_argument(
        "--poll",
        metavar="S",
        type=_positive_float,
        default=DEFAULT_POLL_SECONDS,
        help="seconds between polls",
    )

    parser = argparse.ArgumentParser(
        prog="deepcite",
        description="Deep research over your Deepcite corpora, from the command line.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[connection],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    research = _command(
        commands,
        "research",
        cmd_research,
        [connection, waiting],
        help="start a research run and wait for its report",
        description="Start a research run on a corpus and wait for the cited report, with progress on "
        "stderr. The run happens on the server: if the client times out or is interrupted, it goes on, and "
        "`deepcite resume ID` picks up the wait.",
    )
    research.add_argument("prompt", help="the research question or brief")
    research.add_argument("--corpus", required=True, metavar="ID", help=CORPUS_HELP)
    research.add_argument("--depth", type=str.lower, choices=DEPTHS, help="default: standard")
    research.add_argument("--rubric", help="what a good report must cover")
    research.add_argument("--title", help="default: the prompt's first line")
    research.add_argument("--max-steps", type=_positive_int, metavar="N", help="model requests allowed")
    research.add_argument(
        "--breadth", type=_positive_int, metavar="N", help="sub-questions (default: by depth)"
    )
    research.add_argument(
        "--time-limit",
        type=_positive_int,
        metavar="S",
        help="the run's time limit in seconds (default: by depth)",
    )
    research.add_argument("--model", help="a model the server offers, for this run only")
    research.add_argument(
        "--task-id-only", action="store_true", help="print the new report's id and return without waiting"
    )

    resume = _command(
        commands,
        "resume",
        cmd_resume,
        [connection, waiting],
        help="wait for a report to end; restart a failed or cancelled one",
        description="Wait for a report until it ends, with the same output and exit codes as `research` "
        "(this is what a timed-out `research` points to). A FAILED or CANCELLED report is first resumed "
        "on the server (resumeResearchReport): it continues from its findings with a fresh budget and "
        "keeps its id. A COMPLETED report is printed at once.",
    )
    resume.add_argument("id", help="a report id (as `research` and `list` print it, or its number)")

    listing = _command(
        commands,
        "list",
        cmd_list,
        [connection],
        help="your most recent reports",
        description="Your latest reports.",
    )
    listing.add_argument(
        "n",
        nargs="?",
        type=_positive_int,
        default=DEFAULT_LIST_SIZE,
        help=f"how many (default {DEFAULT_LIST_SIZE})",
    )
    listing.add_argument("--json", action="store_true", help="print a JSON array")

    cancel = _command(
        commands,
        "cancel",
        cmd_cancel,
        [connection],
        help="cancel a queued or running report",
        description="Cancel a report: a queued one ends at once; a running one stops at its next step "
        "and keeps its findings.",
    )
    cancel.add_argument("id", help="a report id (or its number)")
    cancel.add_argument("--json", action="store_true", help="print {task_id, status}")

    corpora = _command(
        commands,
        "corpora",
        cmd_corpora,
        [connection],
        help="the corpora you can research",
        description="Your corpora.",
    )
    corpora.add_argument("--json", action="store_true", help="print a JSON array")

    upload = _command(
        commands,
        "upload",
        cmd_upload,
        [connection],
        help="add documents to a corpus of yours",
        description="Upload files (PDF, Word, HTML, Markdown, text) into a corpus you created: each is "
        "ingested as `manage.py ingest` does, with one result per file; embedding follows on the "
        "server's workers. Exit 1 when any file failed.",
    )
    upload.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="the files to add; a directory adds its PDF, Word, HTML, Markdown and text files",
    )
    upload.add_argument("--corpus", required=True, metavar="ID", help=CORPUS_HELP)
    upload.add_argument("--json", action="store_true", help="print the results as a JSON array")
    return parser


def _command(
    commands: Any, name: str, handler: Command, parents: list, **kwargs: Any
) -> argparse.ArgumentParser:
    # The raw formatter keeps the epilog's lines; descriptions are wrapped here instead.
    kwargs["description"] = textwrap.fill(kwargs["description"], width=90)
    command = commands.add_parser(
        name, parents=parents, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs
    )
    command.set_defaults(handler=handler)
    return command


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return number


def _positive_int(value: str) -> int:
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return int(value)


def _client(args: argparse.Namespace) -> GraphQLClient:
    url = (getattr(args, "url", None) or os.environ.get(ENV_URL, "")).strip()
    token = (getattr(args, "token", None) or os.environ.get(ENV_TOKEN, "")).strip()
    if not url:
        raise UsageError(
            "missing_url", f"no server URL: set {ENV_URL} or pass --url (e.g. http://127.0.0.1:8000)"
        )
    if not token:
        raise UsageError("missing_token", f"no API token: set {ENV_TOKEN} or pass --token")
    return GraphQLClient(url=url, token=token)


# --- Commands -------------------------------------------------------------------------------
def cmd_research(client: GraphQLClient, args: argparse.Namespace, output: Output) -> int:
    deadline = _deadline(args.timeout)
    variables: dict[str, Any] = {"corpusId": _corpus_id(client, args.corpus), "prompt": args.prompt}
    if args.title is not None:
        variables["title"] = args.title
    if args.depth is not None:
        variables["depth"] = args.depth.upper()
    if args.max_steps is not None:
        variables["maxSteps"] = args.max_steps
    if args.rubric is not None:
        variables["rubric"] = args.rubric
    if args.breadth is not None:
        variables["breadth"] = args.breadth
    if args.time_limit is not None:
        variables["timeLimitSeconds"] = args.time_limit
    if args.model is not None:
        variables["model"] = args.model
    report = client.mutate(queries.START_REPORT, variables, "startResearchReport")["report"]
    if args.task_id_only:
        output.line(report["id"])
        return EXIT_DONE
    output.note(f"started report {report['id']}: {report['title']}")
    return _follow(client, report, args, output, deadline)


def cmd_resume(client: GraphQLClient, args: argparse.Namespace, output: Output) -> int:
    deadline = _deadline(args.timeout)
    report_id = global_id(args.id, "ResearchReport")
    report = _report(client, report_id, queries.REPORT_PROGRESS)
    if report["status"] in ("FAILED", "CANCELLED"):
        report = client.mutate(queries.RESUME_REPORT, {"id": report_id}, "resumeResearchReport")["report"]
        output.note(f"resumed report {report['id']} from its findings")
    return _follow(client, report, args, output, deadline)


def cmd_list(client: GraphQLClient, args: argparse.Namespace, output: Output) -> int:
    reports = _paginate(client, queries.REPORTS, "researchReports", args.n)
    if args.json:
        output.json([report_list_json(r) for r in reports])
    elif reports:
        output.table(reports_table(reports))
    else:
        output.note('no reports yet: start one with `deepcite research "prompt" --corpus ID`')
    return EXIT_DONE


def cmd_cancel(client: GraphQLClient, args: argparse.Namespace, output: Output) -> int:
    payload = client.mutate(
        queries.CANCEL_REPORT, {"id": global_id(args.id, "ResearchReport")}, "cancelResearchReport"
    )
    report = payload["report"]
    if args.json:
        output.json({"task_id": report["id"], "status": report["status"]})
    elif report["status"] == "CANCELLING":
        output.line(f"{report['id']}: cancelling (the run stops at its next step and keeps its findings)")
    else:
        output.line(f"{report['id']}: {report['status'].lower()}")
    return EXIT_DONE


def cmd_corpora(client: GraphQLClient, args: argparse.Namespace, output: Output) -> int:
    corpora = _paginate(client, queries.CORPORA, "corpora", None)
    if args.json:
        output.json([corpus_json(c) for c in corpora])
    elif corpora:
        output.table(corpora_table(corpora))
    else:
        output.note("no corpora yet: ingest documents with `manage.py ingest PATH --corpus NAME`")
    return EXIT_DONE


def cmd_upload(client: GraphQLClient, args: argparse.Namespace, output: Output) -> int:
    paths = _upload_paths(args.files, output)
    corpus_id = _corpus_id(client, args.corpus)
    results: list[dict[str, Any]] = []
    for batch in _upload_batches(paths):
        files = []
        for path in batch:
            try:
                files.append((path.name, path.read_bytes()))
            except OSError as exc:
                raise UsageError("file_unreadable", f"cannot read {path}: {exc.strerror or exc}") from exc
        try:
            results += client.upload(corpus_id, files)
        except CliError as error:
            if not results:
                raise
            # What was ingested before the refusal is said, then the refusal.
            _upload_results(results, args, output)
            error.message += (
                f" ({len(results)} files were uploaded before it; {len(paths) - len(results)} not sent)"
            )
            raise
    _upload_results(results, args, output)
    return EXIT_FAILED if any(r.get("status") == "failed" for r in results) else EXIT_DONE


def _upload_paths(arguments: list[Path], output: Output) -> list[Path]:
    """The files to send: each file named, and a directory's files of the types the server
    ingests (in its subdirectories too, hidden ones left out), in name order. A name that is
    neither is a usage error before anything is sent."""
    paths: list[Path] = []
    for argument in arguments:
        if argument.is_dir():
            found = sorted(
                path
                for path in argument.rglob("*")
                if path.is_file()
                and not any(part.startswith(".") for part in path.relative_to(argument).parts)
                and path.suffix.lower() in UPLOAD_SUFFIXES
            )
            if not found:
                raise UsageError(
                    "no_files", f"{argument} holds no {', '.join(sorted(UPLOAD_SUFFIXES))} files"
                )
            output.note(f"{argument}: {len(found)} file{'s' if len(found) != 1 else ''}")
            paths += found
        elif argument.is_file():
            paths.append(argument)
        else:
            raise UsageError("file_unreadable", f"cannot read {argument}: no such file or directory")
    return list(dict.fromkeys(paths))


def _upload_batches(paths: list[Path]) -> list[list[Path]]:
    """`paths` in requests of at most UPLOAD_BATCH_FILES files and UPLOAD_BATCH_BYTES bytes."""
    batches: list[list[Path]] = []
    size = 0
    for path in paths:
        bytes_ = path.stat().st_size
        if not batches or len(batches[-1]) >= UPLOAD_BATCH_FILES or size + bytes_ > UPLOAD_BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(path)
        size += bytes_
    return batches


def _upload_results(results: list[dict[str, Any]], args: argparse.Namespace, output: Output) -> None:
    if args.json:
        output.json(results)
    else:
        output.table(uploads_table(results))


def _corpus_id(client: GraphQLClient, value: str) -> str:
    """A corpus's global id from what the user typed: a global id or a number as they are, else
    the name of exactly one of the corpora the user can see."""
    value = value.strip()
    if value.isascii() and value.isdigit():
        return global_id(value, "Corpus")
    try:
        if base64.b64decode(value, validate=True).decode("utf-8").startswith("Corpus:"):
            return value
    except (ValueError, UnicodeDecodeError):
        pass
    named = [c for c in _paginate(client, queries.CORPORA, "corpora", None) if c["name"] == value]
    if not named:
        # exit 1 as for an unknown id: the same answer whichever way the corpus was named
        raise CliError("corpus_not_found", f"no corpus named {value!r}: `deepcite corpora` lists yours")
    if len(named) > 1:
        ids = ", ".join(c["id"] for c in named)
        raise UsageError("corpus_ambiguous", f"{len(named)} corpora are named {value!r} ({ids}): give the id")
    return named[0]["id"]


# --- Waiting for a run ----------------------------------------------------------------------
def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _follow(
    client: GraphQLClient,
    report: dict[str, Any],
    args: argparse.Namespace,
    output: Output,
    deadline: float | None,
) -> int:
    """Wait for the report to end (or the deadline), then print it the way the flags ask."""
    report_id = report["id"]
    resume_hint = f"resume waiting with: deepcite resume {report_id}"
    try:
        report, ended = _wait(client, report, poll=args.poll, deadline=deadline, output=output)
    except KeyboardInterrupt:
        output.note(f"deepcite: interrupted; report {report_id} keeps running on the server; {resume_hint}")
        return EXIT_INTERRUPTED
    if not ended:
        output.note(
            f"deepcite: [timeout] stopped waiting after {args.timeout:g} s; report {report_id} was still "
            f"{report['status'].lower()} and keeps running on the server; {resume_hint}"
        )
        if args.json:
            output.json(report_json(report))
        return EXIT_TIMED_OUT

    full = _report(client, report_id, queries.REPORT)
    if args.output is not None:
        _write(args.output, full["content"], output)
    if args.json:
        output.json(report_json(full))
    elif full["content"]:
        output.markdown(full["content"])
    summary = f"report {report_id} {full['status'].lower()}"
    if full["durationSeconds"] is not None:
        summary += f" in {full['durationSeconds']:.1f} s"
    citations = len(full["citations"])
    summary += f", {citations} citation{'' if citations == 1 else 's'}: {client.base_url}{full['url']}"
    output.note(summary)
    if full["status"] == "COMPLETED":
        return EXIT_DONE
    if full["error"]:
        output.error(f"report_{full['status'].lower()}", full["error"])
    return EXIT_FAILED


def _wait(
    client: GraphQLClient, report: dict[str, Any], *, poll: float, deadline: float | None, output: Output
) -> tuple[dict[str, Any], bool]:
    """The last state seen, and whether the report has ended (False: the deadline came first)."""
    failures = 0
    with ProgressView(output) as view:
        view.update(report)
        while report["status"] not in TERMINAL_STATUSES:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return report, False
            time.sleep(poll if deadline is None else min(poll, deadline - now))
            try:
                report = _report(client, report["id"], queries.REPORT_PROGRESS)
            except CliError as error:
                # A server restart or a dropped connection should not end a long wait.
                if not error.transient or failures >= POLL_TRANSIENT_RETRIES:
                    raise
                failures += 1
                view.retrying(f"[{error.code}] {error.message}")
                continue
            failures = 0
            view.update(report)
    return report, True


def _report(client: GraphQLClient, report_id: str, query: str) -> dict[str, Any]:
    report = client.execute(query, {"id": report_id})["researchReport"]
    if report is None:
        raise CliError("report_not_found", f"report {report_id} not found")
    return report


def _paginate(client: GraphQLClient, query: str, field: str, limit: int | None) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    after = None
    while limit is None or len(nodes) < limit:
        first = PAGE_SIZE_MAX if limit is None else min(PAGE_SIZE_MAX, limit - len(nodes))
        connection = client.execute(query, {"first": first, "after": after})[field]
        nodes.extend(edge["node"] for edge in connection["edges"] if edge and edge.get("node"))
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
    return nodes


def _write(path: Path, content: str, output: Output) -> None:
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise CliError("output_failed", f"cannot write {path}: {exc.strerror or exc}") from exc
    output.note(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
