"""The command line: defaults, the key read from the environment, and every flag refused with its reason."""

from __future__ import annotations

import pytest

from dockyard_name_origin.__main__ import entry
from dockyard_name_origin.settings import DEFAULT_API_URL, settings_from
from dockyard_shared import InvalidArgument


def parse(*args: str):
    return settings_from(entry.parser(with_runner=False).parse_args(list(args)))


def test_the_defaults_use_nationalize_and_a_cache_in_the_user_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("NATIONALIZE_API_KEY", raising=False)
    settings = parse()
    assert settings.api_url == DEFAULT_API_URL and settings.api_key is None
    assert settings.cache_url == f"sqlite:///{tmp_path}/dockyard/name-origin/cache.db"
    assert settings.cache_ttl_days == 30 and not settings.offline
    assert (settings.genderize_url, settings.agify_url) == (
        "https://api.genderize.io",
        "https://api.agify.io",
    )


def test_the_key_comes_from_the_named_variable_and_never_shows_in_the_settings(monkeypatch):
    monkeypatch.setenv("MY_NATIONALIZE", " secret-key ")
    settings = parse("--api-key-env", "MY_NATIONALIZE", "--no-cache")
    assert settings.api_key == "secret-key" and settings.cache_url is None
    assert "secret-key" not in repr(settings)


def test_a_cache_url_and_ttl_are_taken_as_given():
    settings = parse("--cache-url", "postgresql://db.internal/names", "--cache-ttl", "2.5", "--offline")
    assert settings.cache_url == "postgresql://db.internal/names" and settings.cache_ttl_days == 2.5
    assert settings.offline and "db.internal" not in repr(settings)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--offline", "--no-cache"), "--offline answers from the cache only"),
        (("--api-url", "ftp://example.com"), "--api-url must be an http(s) URL"),
        (("--api-url", "https://user:pw@example.com"), "without credentials"),
        (("--api-url", "https://example.com/?apikey=x"), "without credentials or query"),
        (("--genderize-url", "file:///etc/passwd"), "--genderize-url must be an http(s) URL"),
        (("--agify-url", "https://k@example.com"), "--agify-url must be an http(s) URL"),
        (("--api-key-env", "nat_abc def"), "--api-key-env must name an environment variable"),
        (("--cache-ttl", "0"), "--cache-ttl must be a positive number"),
        (("--cache-ttl", "nan"), "--cache-ttl must be a positive number"),
    ],
)
def test_bad_flags_are_refused_with_the_reason(args, said):
    with pytest.raises(InvalidArgument, match=said.replace("(", r"\(").replace(")", r"\)")):
        parse(*args)


def test_no_cache_and_cache_url_cannot_be_combined(capsys):
    with pytest.raises(SystemExit):
        parse("--no-cache", "--cache-url", "sqlite:////tmp/x.db")
    assert "not allowed with argument" in capsys.readouterr().err
