"""Restoration and standbys: the changelog reader, restorer, standby updater, changelog ends."""
