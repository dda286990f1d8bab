"""The serving study: requests of I prompt and O output tokens, served at a rate or by closed-loop
clients (``[serving]``): the serving, pools and simulated tables (docs/serving.md)."""
