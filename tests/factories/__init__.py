"""Objects the tests make, each defined once and imported from here (never from a conftest):

- `agents`: hosted agents (open or behind an API key), the key header, the developer form data.
- `messages`: a user's message, as the lifecycle takes it and as either version sends it.
- `versions`: the protocol versions and each one's name for each method.
- `envelopes`: JSON-RPC requests of both versions, from the stored samples or made afresh.
- `errors`: the error objects the hub answers with, whole, as each version spells them.
- `push`: webhook configs as each version spells them, with their secrets.
- `tasks`: stored tasks and the artifacts the admin shows.
- `pre02`: the pre-0.2 methods' requests, from the first guide's exchanges or made afresh.
"""
