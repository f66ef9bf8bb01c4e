"""
ikd.errors: the one exception of the client, IkdError.

Every refusal of ikd (an HTTP status of 400 or more, a stream "error"
message, a tick target's error) becomes an IkdError carrying the wire
error's code ("invalid_request", "unknown_chain", ...), ikd's message, the
JSON pointer of the offending value ("/target/position/2") and, where they
apply, the HTTP status, the stream and the seq. The client's own failures
use the same class with codes of its own (CLIENT_CODES), so a caller
catches one type.
"""

__all__ = ["IkdError", "CLIENT_CODES"]

#: codes of the client's own failures, never sent by ikd
CLIENT_CODES = {
    "network": "ikd could not be reached (after the retries)",
    "bad_answer": "ikd answered something that is not what the protocol says",
    "not_connected": "the stream's connection is not open (connecting or reconnecting)",
    "connection_lost": "the connection dropped before this answer came",
    "closed": "the connection or the stream was closed",
    "timeout": "no answer within the time the caller gave",
    "unexpected_message": "ikd sent a message of a type this client does not know",
}


class IkdError(Exception):
    """An answer of ikd that refuses a request or a stream message, or a
    failure of the client itself (CLIENT_CODES)."""

    def __init__(self, code, message, path="", status=None, stream=None, seq=None,
                 retry_after=None):
        super().__init__("%s: %s%s" % (code, message, " (at %s)" % path if path else ""))
        self.code = code
        self.message = message
        self.path = path
        self.status = status
        self.stream = stream
        self.seq = seq
        self.retry_after = retry_after

    @classmethod
    def from_body(cls, body, status=None, stream=None, seq=None, retry_after=None):
        """The IkdError of a decoded answer or message holding an "error"
        object (code "http_<status>" when there is none)."""
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict):
            return cls("http_%s" % status, "unexpected answer: %.200r" % (body,), "", status,
                       stream, seq, retry_after)
        return cls(err.get("code", "unknown"), err.get("message", ""), err.get("path", ""),
                   status, stream, seq, retry_after)
