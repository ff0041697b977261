"""Kafka wire protocol, shared by the broker and the clients: kio codec dispatch by
(api key, api version) with a version-tolerant response builder (``codec``) and what a handler
knows about a request besides its body (``context``). Socket framing lives in
``broker/server.py``; RecordBatch v2 parsing in ``broker/log/batch.py``."""
