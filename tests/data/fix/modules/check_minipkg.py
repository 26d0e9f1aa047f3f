"""minipkg's own tests (named check_ so that codeasst's test run does not collect them)."""

import minipkg
from minipkg import helpers


def test_public_api_is_re_exported():
    assert minipkg.Settings().timeout == minipkg.DEFAULT_TIMEOUT == 30
    assert minipkg.to_native(b"abc") == "abc" and minipkg.user_agent() == "minipkg"
    assert helpers.to_native is minipkg.to_native


def test_parse_header_links():
    links = minipkg.parse_header_links('<http://x/front.jpeg>; rel="front"; type="image/jpeg"')
    assert links == [{"url": "http://x/front.jpeg", "rel": "front", "type": "image/jpeg"}]


def test_merge_settings_prefers_the_request():
    merged = minipkg.merge_settings({"timeout": 5, "verify": None}, {"timeout": 10, "verify": False})
    assert (merged.timeout, merged.verify, merged.user_agent) == (5, False, "minipkg")
    assert minipkg.merge_settings({"timeout": 1}, None) == {"timeout": 1}


def test_default_hook_returns_the_response():
    from minipkg.settings import default_hook

    assert default_hook("r") == "r"
