"""
relay.py: the byte pump of the tests' TCP relays (test_registry_shared's
Proxy in front of Redis, test_python_client's TLS front in front of ikd):
one direction of a relayed connection, copied until either end closes.
"""
import socket


def pump(a, b, on_data=None):
    """Copies what socket a receives to socket b until a ends or either
    fails, then shuts both down (the other direction's pump sees it).
    on_data(data), when given, sees each chunk before it is passed on, and
    may block to hold it."""
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            if on_data is not None:
                on_data(data)
            b.sendall(data)
    except OSError:
        pass
    for x in (a, b):
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
