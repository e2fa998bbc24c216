"""The HTTP clients of the services cdcmirror talks to: Kafka Connect's REST API and the
schema registry (stdlib HTTP, basic authentication, no secret in a log or an error)."""
