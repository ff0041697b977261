"""The commit: the numbered commit and one committer per processing guarantee."""
