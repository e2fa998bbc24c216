"""`cdcmirror repair`: heal a drifted table without a full reload."""
