"""The README and the pages under docs/ keep their promises: a short README that starts with
the two commands CI runs too, links and anchors that lead somewhere, and settings that exist.

No stack and no database: these read files only.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
SETTINGS_FILE = ROOT / "a2ahub" / "settings.py"

# Backticked names shaped like settings that nothing in this repository reads, each with why.
NOT_SETTINGS = {
    "TCK_MIRROR": "the external conformance kit's variable (../shared/tck/README.md)",
    "TASK_NOT_FOUND": "an ErrorInfo reason of the HTTP+JSON binding, a wire value",
    "INVALID_ARGUMENT": "an ErrorInfo reason of the HTTP+JSON binding, a wire value",
    "FAILED_PRECONDITION": "a gRPC status code, a wire value",
    "A2A_API_KEY": "read by the copy-paste snippets a caller runs (developers/snippets.py)",
    "A2A_TOKEN": "read by the copy-paste snippets a caller runs (developers/snippets.py)",
    "CLIENT_ID": "read by the token snippet of an OAuth2-only agent (developers/snippets.py)",
    "CLIENT_SECRET": "read by the token snippet of an OAuth2-only agent (developers/snippets.py)",
}
# The test and bench tooling's own variables (PYTEST_ARGS, A2AHUB_REQUIRE_STACK, ...) are no
# settings of the hub, but they must exist where the docs say: read by the Makefile, CI's
# script, or the tests and benchmarks through os.environ.
# The OpenTelemetry SDK's own standard variables (OTEL_EXPORTER_OTLP_ENDPOINT, ...): it reads
# them itself when the hub turns tracing on (docs/tracing.md).
OPENTELEMETRY = "OTEL_"
SHELL_TOOLING = [ROOT / "Makefile", ROOT / ".ci" / "run"]
PYTHON_TOOLING = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("bench/*.py")]
SETTING_SHAPE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def prose(path: Path) -> str:
    """The page without its fenced code blocks, where brackets are code, not links."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#{1,6} (.+)$", prose(path), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def relative_links(path: Path) -> list[str]:
    return [t for t in LINK.findall(prose(path)) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def env_readers() -> list[ast.Call]:
    """The calls of a2ahub/settings.py that read the environment: env_str("NAME", ...) and kin."""
    tree = ast.parse(SETTINGS_FILE.read_text(encoding="utf-8"))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return [call for call in calls if getattr(call.func, "id", "").startswith("env_")]


def names_read(call: ast.Call) -> set[str]:
    """The variable a reader reads; the renamed-setting reader also names the old one second."""
    count = 2 if getattr(call.func, "id", "") == "env_renamed_list" else 1
    return {
        a.value
        for a in call.args[:count]
        if isinstance(a, ast.Constant) and isinstance(a.value, str)
    }


def env_settings_read() -> set[str]:
    return set().union(*(names_read(call) for call in env_readers()))


def settings_read() -> set[str]:
    """Every environment variable the settings read, and every setting they define (such as
    EXECUTOR_KINDS, which the docs name as a setting though no variable sets it)."""
    tree = ast.parse(SETTINGS_FILE.read_text(encoding="utf-8"))
    defined = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    annotated = {
        node.target.id
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    return env_settings_read() | defined | annotated


def test_the_readme_is_at_most_250_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readme_opens_with_the_two_commands_for_a_fresh_machine() -> None:
    first = README.read_text(encoding="utf-8").splitlines()[:5]
    assert any(line.strip().startswith("make run ") for line in first)
    assert any(line.strip().startswith("make test ") for line in first)


def test_the_two_commands_are_make_targets_and_ci_runs_the_same_test_command() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^run: ", makefile, re.M) and re.search(r"^test: ", makefile, re.M)
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in ci_lines


def test_every_docs_page_is_listed_in_the_index_and_the_readme() -> None:
    index = relative_links(ROOT / "docs" / "README.md")
    readme = relative_links(README)
    for page in DOCS:
        if page.name != "README.md":
            assert page.name in index, page.name
            assert f"docs/{page.name}" in readme, page.name


def test_every_relative_link_leads_to_a_file_and_every_anchor_to_a_heading() -> None:
    broken = []
    for page in PAGES:
        for link in relative_links(page):
            target, _, anchor = link.partition("#")
            file = (page.parent / target).resolve() if target else page
            if not file.exists():
                broken.append(f"{page.name}: {link} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.name}: {link} (no such heading)")
    assert broken == []


SHELL_READS = re.compile(r"\$[({]?([A-Z][A-Z0-9_]*)|^\s*(?:export )?([A-Z][A-Z0-9_]*) ?\??=", re.M)
PYTHON_READS = re.compile(r"(?:environ\.get\(|environ\[|getenv\()\"([A-Z][A-Z0-9_]*)\"")


def tooling_variables() -> set[str]:
    """The variables the tooling reads: $(NAME) and NAME= in make and sh, os.environ in Python."""
    shell = "\n".join(path.read_text(encoding="utf-8") for path in SHELL_TOOLING)
    python = "\n".join(
        p.read_text(encoding="utf-8") for p in PYTHON_TOOLING if p.name != "test_docs.py"
    )
    names = {name for match in SHELL_READS.findall(shell) for name in match if name}
    return names | set(PYTHON_READS.findall(python))


def test_every_setting_named_in_the_docs_is_one_the_hub_or_its_tooling_reads() -> None:
    known = settings_read() | tooling_variables()
    unknown = []
    for page in PAGES:
        for span in re.findall(r"`([^`\n]+)`", prose(page)):
            if (
                SETTING_SHAPE.fullmatch(span)
                and span not in known
                and span not in NOT_SETTINGS
                and not span.startswith(OPENTELEMETRY)
            ):
                unknown.append(f"{page.name}: {span}")
    assert unknown == []


def test_every_environment_setting_is_in_the_settings_table() -> None:
    section = (ROOT / "docs" / "running.md").read_text(encoding="utf-8").split("## Settings")[1]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]*)`", section))
    assert env_settings_read() - documented == set()


def test_each_exception_to_the_settings_check_is_still_named_in_the_docs() -> None:
    spans = {s for page in PAGES for s in re.findall(r"`([^`\n]+)`", prose(page))}
    assert set(NOT_SETTINGS) - spans == set()


def test_every_package_the_project_installs_says_why_it_is_there() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    names = {re.split(r"[\\[<>=!~ ;]", requirement)[0].lower() for requirement in wanted}
    page = (ROOT / "docs" / "dependencies.md").read_text(encoding="utf-8").lower()

    assert sorted(name for name in names if name not in page) == []
