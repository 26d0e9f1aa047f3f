"""Settings of a client session."""
from .helpers import to_native

DEFAULT_TIMEOUT = 30

#: Called with every response before it is returned; replace it to inspect or change responses.
default_hook = lambda response: response


class Settings(object):
    """What a session sends with every request, unless the request says otherwise.

    Every keyword argument sets the attribute of the same name.
    """

    def __init__(self, timeout=None, headers=None, verify=True, user_agent=None):
        #: Seconds to wait for the server to send data before giving up, as a float, or None to wait forever
        self.timeout = DEFAULT_TIMEOUT if timeout == None else timeout
        #: A case-sensitive dictionary of headers to send with every request.
        self.headers = dict(headers or {})
        self.verify = verify  #: whether to check the server's TLS certificate
        #: The User-Agent header; the package's own name when not given.
        self.user_agent = to_native(user_agent or b"minipkg")

    def __repr__(self):
        return '<Settings timeout=%r verify=%r>' % (self.timeout,self.verify)
