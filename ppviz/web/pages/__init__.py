"""The pages of the web view (one package each); a page never imports another."""
