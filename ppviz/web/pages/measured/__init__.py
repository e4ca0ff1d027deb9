"""The measured-run view: uploaded traces of a real run against their simulation under fitted costs."""
