"""The mirror job's pure logic: carriers, envelope decoding, positions, MERGE text, evolution."""
