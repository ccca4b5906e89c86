"""View tests: the harness's fixtures (tests/apps/fixtures.py)."""

from tests.apps.fixtures import open_view, view_artifacts, view_browser, view_host, view_page_url

__all__ = ["open_view", "view_artifacts", "view_browser", "view_host", "view_page_url"]
