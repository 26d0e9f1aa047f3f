"""Parsing helpers.

`to_native` is imported here so that callers may keep importing it from helpers, as they always have.
"""
import re
from ._internal import to_native

#: The pattern of one link in a Link header: <url>; rel="next"; type="text/html"
LINK_PATTERN = re.compile(r'\s*<(?P<url>[^>]*)>(?P<params>(?:\s*;\s*[\w-]+="[^"]*")*)')

strip_quotes = lambda value: value.strip(' \'"')


def parse_header_links(value):
    """Return a list of parsed link headers proxies.

    i.e. Link: <http:/.../front.jpeg>; rel=front; type="image/jpeg",<http://.../back.jpeg>; rel=back;type="image/jpeg"
    """
    links = []
    for match in LINK_PATTERN.finditer(value):
        link = {'url': match.group('url')}
        for param in match.group('params').split(';'):
            if '=' in param:
                key, _, val = param.partition('=')
                link[key.strip()] = strip_quotes(val)
        links.append(link)
    return links


def merge_settings(request_settings, session_settings, dict_class = dict):
    """Merge the settings of a request with those of its session; the request's win."""
    if session_settings == None:
        return request_settings
    merged = dict_class(session_settings)
    merged.update((k, v) for k, v in request_settings.items()
        if v is not None)
    return Settings(**merged)


# At the bottom on purpose: settings imports this module, so importing settings at the top is a cycle.
from .settings import Settings
