"""SASL primitives shared by the broker (server side) and streamrt's clients (client side)."""
