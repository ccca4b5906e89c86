"""Hostile repositories and remotes against the remote toolset. Every attack is first shown to work with
plain git (the control), then every remote tool is called: nothing the repository names may run, no
request may carry what it adds, no URL it chooses may leave the allowed protocols or the roots."""

from __future__ import annotations

import json
import os
import socketserver
import stat
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.git.helpers import GIT_ENV, git
from tests.git.remote_setup import Remotes, commit, head_of, remote_server
from tests.git.smart_http import TOKEN, SmartHttpRemote, bare_clone, have_http_backend
from tests.harness import LEGACY, MODERN, open_session

pytestmark = pytest.mark.skipif(not have_http_backend(), reason="git-http-backend is not installed")

HOOKS = ("pre-push", "reference-transaction", "post-merge", "post-checkout", "post-rewrite", "pre-auto-gc")
REMOTE_HOOKS = (
    "pre-receive",
    "update",
    "post-receive",
    "post-update",
    "reference-transaction",
    "proc-receive",
)


class _Listener(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@dataclass
class Scene:
    remotes: Remotes
    web: SmartHttpRemote
    markers: Path
    proxy: str  # a listener on 127.0.0.1 that touches markers/proxy when anything connects
    bin: Path  # on PATH: git-remote-evil touches markers/vcs

    @property
    def web_url(self) -> str:
        return f"{self.web.url}/project.git"

    def fired(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())

    def touch(self, name: str) -> str:
        return f"touch {self.markers / name}"


@pytest.fixture
def scene(remotes, tmp_path, monkeypatch):
    markers = tmp_path / "markers"
    markers.mkdir()
    served = tmp_path / "http"
    served.mkdir()
    bare_clone(remotes.origin, served, "project")

    class Touch(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            (markers / "proxy").touch()

    listener = _Listener(("127.0.0.1", 0), Touch)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper = bin_dir / "git-remote-evil"
    helper.write_text(f"#!/bin/sh\ntouch {markers / 'vcs'}\n")
    helper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    git(remotes.work, "checkout", "-q", "-b", "feature")
    commit(remotes.work, "feature.txt")
    git(remotes.work, "tag", "-a", "unnamed-tag", "-m", "never pushed unless named")
    with SmartHttpRemote(served) as web:
        git(remotes.work, "remote", "add", "web", f"{web.url}/project.git")
        git(remotes.work, "remote", "add", "ssh", "ssh://git@127.0.0.1/project.git")
        yield Scene(remotes, web, markers, f"http://127.0.0.1:{listener.server_address[1]}", bin_dir)
    listener.shutdown()
    listener.server_close()


def hooks_folder(scene: Scene, folder: Path, names: tuple[str, ...], prefix: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        script = folder / name
        script.write_text(f"#!/bin/sh\n{scene.touch(prefix + name)}\ncat >/dev/null\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


@dataclass
class Attack:
    remote: str  # which remote the tools are pointed at
    settings: dict[str, str]  # config keys set in the repository (values may use {touch} and {scene.*})
    control: object  # plain git's command that shows the attack works (or a function of the scene)
    prepare: object = None  # (scene) -> None, for what is not a config key
    extra_check: object = None  # (scene) -> list of problems
    markers: tuple[str, ...] = ("fired",)
    control_env: dict[str, str] = field(default_factory=dict)


COOKIE = "127.0.0.1\tFALSE\t/\tFALSE\t0\tdockyard\tevil-cookie\n"


def _jar(scene: Scene) -> Path:
    return scene.remotes.work.parent / "jar.txt"


def _proxy_headers(scene: Scene, header: str) -> list[str]:
    return [r.headers[header] for r in scene.web.requests if header in r.headers]


ATTACKS = {
    "core.sshCommand": Attack("ssh", {"core.sshCommand": "{touch}"}, ("fetch", "ssh")),
    "credential.helper": Attack("web", {"credential.helper": "!{touch}"}, ("fetch", "web")),
    "credential.<url>.helper": Attack("web", {"credential.{web_url}.helper": "!{touch}"}, ("fetch", "web")),
    "core.askPass": Attack("web", {"core.askPass": "{touch_script}"}, ("fetch", "web")),
    "url.insteadOf": Attack(
        "origin",
        {"url.ext::sh -c touch% {marker} #.insteadOf": "{origin}"},
        ("fetch", "origin"),
        control_env={"GIT_ALLOW_PROTOCOL": "ext:file"},
    ),
    "url.pushInsteadOf": Attack(
        "origin",
        {"url.ext::sh -c touch% {marker} #.pushInsteadOf": "{origin}"},
        ("push", "origin", "feature"),
        control_env={"GIT_ALLOW_PROTOCOL": "ext:file"},
    ),
    "remote.pushurl": Attack(
        "origin",
        {"remote.origin.pushurl": "ext::sh -c touch% {marker}"},
        ("push", "origin", "feature"),
        control_env={"GIT_ALLOW_PROTOCOL": "ext:file"},
    ),
    "remote.uploadpack": Attack(
        "origin", {"remote.origin.uploadpack": "{touch}; git-upload-pack"}, ("fetch", "origin")
    ),
    "remote.receivepack": Attack(
        "origin", {"remote.origin.receivepack": "{touch}; git-receive-pack"}, ("push", "origin", "feature")
    ),
    "remote.vcs": Attack(
        "origin",
        {"remote.origin.vcs": "evil"},
        ("fetch", "origin"),
        markers=("vcs",),
        control_env={"GIT_ALLOW_PROTOCOL": "evil:file"},
    ),
    "remote.proxy": Attack("web", {"remote.web.proxy": "{proxy}"}, ("fetch", "web"), markers=("proxy",)),
    "http.proxy": Attack("web", {"http.proxy": "{proxy}"}, ("fetch", "web"), markers=("proxy",)),
    "http.<url>.proxy": Attack(
        "web", {"http.{web_url}.proxy": "{proxy}"}, ("fetch", "web"), markers=("proxy",)
    ),
    "http.extraHeader": Attack(
        "web",
        {"http.extraHeader": "X-Dockyard-Evil: 1"},
        ("fetch", "web"),
        extra_check=lambda scene: _proxy_headers(scene, "X-Dockyard-Evil"),
        markers=(),
    ),
    "http.cookieFile": Attack(
        "web",
        {"http.cookieFile": "{cookies}"},
        ("fetch", "web"),
        extra_check=lambda scene: _proxy_headers(scene, "Cookie"),
        markers=(),
    ),
    "http.saveCookies": Attack(
        "web",
        {"http.cookieFile": "{jar}", "http.saveCookies": "true"},
        # curl writes the jar when git ends well: the control needs the credentials
        lambda scene: ("fetch", scene.web_url.replace("://", f"://u:{TOKEN}@")),
        prepare=lambda scene: _jar(scene).write_text(COOKIE),
        extra_check=lambda scene: (
            [] if _jar(scene).read_text() == COOKIE else ["the cookie jar was rewritten"]
        ),
        markers=(),
    ),
    "core.hooksPath": Attack(
        "origin",
        {"core.hooksPath": "{hooks}"},
        ("push", "origin", "feature"),
        markers=tuple("local-" + hook for hook in HOOKS),
    ),
    "hooks folder": Attack(
        "origin",
        {},
        ("push", "origin", "feature"),
        prepare=lambda scene: hooks_folder(scene, scene.remotes.work / ".git" / "hooks", HOOKS, "local-"),
        markers=tuple("local-" + hook for hook in HOOKS),
    ),
    "the remote's hooks": Attack(
        "origin",
        {},
        ("push", "origin", "feature"),
        prepare=lambda scene: hooks_folder(scene, scene.remotes.origin / "hooks", REMOTE_HOOKS, "remote-"),
        markers=tuple("remote-" + hook for hook in REMOTE_HOOKS),
    ),
    "the remote's hooksPath": Attack(
        "origin",
        {},
        ("push", "origin", "feature"),
        prepare=lambda scene: git(
            scene.remotes.origin,
            "config",
            "core.hooksPath",
            str(hooks_folder(scene, scene.remotes.origin / "evil-hooks", REMOTE_HOOKS, "remote-")),
        ),
        markers=tuple("remote-" + hook for hook in REMOTE_HOOKS),
    ),
    "push.followTags": Attack(
        "origin",
        {"push.followTags": "true"},
        ("push", "origin", "feature"),
        extra_check=lambda scene: [
            tag for tag in ("unnamed-tag",) if head_of(scene.remotes.origin, f"refs/tags/{tag}")
        ],
        markers=(),
    ),
}


def plant(scene: Scene, attack: Attack, where: str) -> None:
    work = scene.remotes.work
    hooks = hooks_folder(scene, work.parent / "planted-hooks", HOOKS, "local-")
    askpass = work.parent / "askpass.sh"
    askpass.write_text(f"#!/bin/sh\n{scene.touch('fired')}\n")
    askpass.chmod(0o755)
    cookies = work.parent / "cookies.txt"
    cookies.write_text(COOKIE)
    values = {
        "touch": scene.touch("fired"),
        "touch_script": str(askpass),
        "marker": str(scene.markers / "fired"),
        "origin": str(scene.remotes.origin),
        "web_url": scene.web_url,
        "proxy": scene.proxy,
        "hooks": str(hooks),
        "cookies": str(cookies),
        "jar": str(_jar(scene)),
    }
    target = work / ".git" / "config"
    if where == "include":
        target = work / "hostile.inc"  # a file of the work tree, included by a relative path
        git(work, "config", "include.path", "../hostile.inc")
    for key, value in attack.settings.items():
        git(work, "config", "--file", str(target), key.format(**values), value.format(**values))
    if attack.prepare:
        attack.prepare(scene)


def control(scene: Scene, attack: Attack) -> None:
    """Plain git, with the same repository: the attack must work, or the test proves nothing. Then
    everything it left is undone."""
    env = {
        **GIT_ENV,
        "PATH": os.environ["PATH"],  # with the fixture's bin folder
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": "file:http:ssh",
        **attack.control_env,
    }
    command = attack.control(scene) if callable(attack.control) else attack.control
    before = len(scene.web.requests)
    subprocess.run(
        ["git", *command],
        cwd=scene.remotes.work,
        env=env,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if attack.markers:
        shown = [m for m in attack.markers if (scene.markers / m).exists()]
        assert shown, f"the control did not fire: {command}, markers {scene.fired()}"
    if attack.extra_check:
        assert attack.extra_check(scene), f"the control did not show the attack: {command}"
    for repo in (scene.remotes.origin, scene.web.root / "project.git"):
        git(repo, "update-ref", "-d", "refs/heads/feature", check=False)
        git(repo, "update-ref", "-d", "refs/tags/unnamed-tag", check=False)
    for marker in scene.markers.iterdir():  # the remote's own hooks ran for the lines above too
        marker.unlink()
    del scene.web.requests[before:]
    if attack.prepare:
        attack.prepare(scene)


async def call_every_remote_tool(session, remote: str) -> list[str]:
    texts = [(await session.call("git_remotes")).text]
    texts.append((await session.call("git_fetch", {"remote": remote, "prune": True})).text)
    texts.append((await session.call("git_pull", {"remote": remote, "branch": "main"})).text)
    texts.append((await session.call("git_push", {"remote": remote, "set_upstream": True})).text)
    texts.append((await session.call("git_push", {"remote": remote, "force_with_lease": True})).text)
    return texts


@pytest.mark.parametrize("where", ["config", "include"])
@pytest.mark.parametrize("name", list(ATTACKS))
async def test_nothing_the_repository_names_runs_or_reaches_a_request(scene, name, where):
    attack = ATTACKS[name]
    plant(scene, attack, where)
    control(scene, attack)
    # With the token, requests to the HTTP remote succeed: every step of a fetch and a push is reached.
    host = scene.web.url.removeprefix("http://")
    server = remote_server(scene.remotes, trust=True, token=TOKEN, token_env="T", token_hosts=(host,))
    era = LEGACY if where == "include" else MODERN
    async with open_session(server, era=era, elicit=lambda message: {"confirm": True}) as session:
        texts = await call_every_remote_tool(session, attack.remote)
    assert scene.fired() == [], texts
    if attack.extra_check:
        assert attack.extra_check(scene) == []


# -- URLs the repository chooses -----------------------------------------------------------------


def url_cases(scene: Scene, outside: Path) -> dict[str, str]:
    link = scene.remotes.root / "link-out.git"
    link.symlink_to(outside)
    return {
        "ext": f"ext::sh -c touch% {scene.markers / 'fired'}",
        "fd": "fd::3,4",
        "transport syntax": f"file::{scene.remotes.origin}",
        "unknown scheme": "evil://example.com/x.git",
        "file outside the roots": f"file://{outside}",
        "path outside the roots": str(outside),
        "relative path out": os.path.relpath(outside, scene.remotes.work),
        "a link leading out": str(link),
        "home folder": "~/project.git",
        "ssh option as host": "ssh://-oProxyCommand=touch%20x/project.git",
    }


async def test_urls_that_run_programs_or_leave_the_roots_are_refused(scene, tmp_path):
    outside = tmp_path / "outside.git"
    git(tmp_path, "clone", "-q", "--bare", str(scene.remotes.origin), str(outside))
    cases = url_cases(scene, outside)
    env = {**GIT_ENV, "GIT_ALLOW_PROTOCOL": "ext"}
    subprocess.run(["git", "ls-remote", cases["ext"]], env=env, capture_output=True, timeout=60)
    assert scene.fired() == ["fired"], "the control did not fire"
    (scene.markers / "fired").unlink()
    outside_refs = git(outside, "for-each-ref")
    server = remote_server(scene.remotes, trust=True)
    async with open_session(server, elicit=lambda message: {"confirm": True}) as session:
        for name, url in cases.items():
            git(scene.remotes.work, "remote", "set-url", "origin", url)
            texts = await call_every_remote_tool(session, "origin")
            refusals = [text for text in texts[1:] if text.startswith("Error (permission_denied)")]
            assert len(refusals) == 4, (name, texts)
            listed = next(r for r in json.loads(texts[0])["remotes"] if r["name"] == "origin")
            assert listed["refused"], name
    assert scene.fired() == []
    assert git(outside, "for-each-ref") == outside_refs  # nothing was pushed there
    assert head_of(scene.remotes.work, "refs/remotes/origin/feature") is None


async def test_a_push_url_of_its_own_is_checked_like_the_url(scene, tmp_path):
    outside = tmp_path / "outside.git"
    git(tmp_path, "clone", "-q", "--bare", str(scene.remotes.origin), str(outside))
    git(scene.remotes.work, "remote", "set-url", "--push", "origin", str(outside))
    async with open_session(remote_server(scene.remotes)) as session:
        fetched = await session.call("git_fetch")
        pushed = await session.call_error("git_push")
    assert not fetched.is_error  # fetching uses the URL, which is fine
    assert pushed.startswith("Error (permission_denied)") and "outside the folders" in pushed
    assert head_of(outside, "refs/heads/feature") is None


async def test_a_local_remote_that_reads_objects_from_outside_the_roots_is_refused(scene, tmp_path):
    elsewhere = tmp_path / "elsewhere.git"
    git(tmp_path, "clone", "-q", "--bare", str(scene.remotes.origin), str(elsewhere))
    (scene.remotes.origin / "objects" / "info" / "alternates").write_text(f"{elsewhere / 'objects'}\n")
    async with open_session(remote_server(scene.remotes)) as session:
        text = await session.call_error("git_fetch")
    assert text.startswith("Error (permission_denied)") and "alternate" in text


async def test_tls_settings_of_the_repository_are_refused_by_name(scene):
    git(scene.remotes.work, "config", f"http.{scene.web_url}.sslCAInfo", "/tmp/evil-ca.pem")
    async with open_session(remote_server(scene.remotes)) as session:
        texts = [await session.call_error(tool, {"remote": "web"}) for tool in ("git_fetch", "git_pull")]
        listed = (await session.call_ok("git_remotes")).data
    assert all("sslcainfo" in text.lower() and "permission_denied" in text for text in texts)
    assert "sslCAInfo".lower() in listed["note"].lower()
    assert scene.web.requests == []


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("git_fetch", {"remote": "--upload-pack=touch /tmp/dockyard-evil"}),
        ("git_pull", {"branch": "--upload-pack=touch /tmp/dockyard-evil"}),
        ("git_push", {"branch": "-f"}),
        ("git_push", {"tags": ["--mirror"]}),
        ("git_push", {"remote": "origin\nx"}),
        ("git_pull", {"branch": "main:refs/heads/other"}),
        ("git_push", {"tags": ["v1.0:refs/heads/main"]}),
    ],
)
async def test_names_that_would_be_options_or_refspecs_are_refused(scene, tool, arguments):
    async with open_session(remote_server(scene.remotes)) as session:
        text = await session.call_error(tool, arguments)
    assert text.startswith("Error (invalid_argument)") or text.startswith("Error (not_found)")
    assert scene.fired() == [] and scene.web.requests == []


async def test_a_local_remote_never_checks_a_push_out_into_its_work_tree(scene, tmp_path):
    peer = scene.remotes.root / "peer"
    git(scene.remotes.root, "clone", "-q", str(scene.remotes.origin), str(peer))
    git(peer, "checkout", "-q", "-b", "feature")
    git(peer, "config", "receive.denyCurrentBranch", "updateInstead")
    git(scene.remotes.work, "remote", "add", "peer", str(peer))
    env = {**GIT_ENV, "GIT_ALLOW_PROTOCOL": "file"}
    control_push = ["git", "push", "-q", "peer", "feature"]
    subprocess.run(control_push, cwd=scene.remotes.work, env=env, check=True, capture_output=True)
    assert (peer / "feature.txt").exists(), "the control did not check the push out"
    git(peer, "reset", "-q", "--hard", "HEAD~1")
    commit(scene.remotes.work, "more.txt")
    # The peer's checked-out branch is its default branch: the user is asked, and accepts.
    async with open_session(
        remote_server(scene.remotes), elicit=lambda message: {"confirm": True}
    ) as session:
        text = await session.call_error("git_push", {"remote": "peer", "repo_path": str(scene.remotes.work)})
    assert text.startswith("Error (conflict)") and "rejected" in text
    assert not (peer / "feature.txt").exists() and not (peer / "more.txt").exists()
