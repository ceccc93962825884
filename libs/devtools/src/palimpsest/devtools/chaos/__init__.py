"""``palimpsest chaos``: a bounded soak of the whole system with faults, and the checks after it.

:mod:`.repos` makes and changes the generated git repositories, :mod:`.github` plays GitHub (signed
webhook deliveries out, the REST API the reviewer posts to in), :mod:`.soak` drives the run and
its faults, :mod:`.verify` waits for quiescence and checks every promise against the database,
the stream, git and the fake provider.
"""
