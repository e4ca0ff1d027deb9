"""What every page uses: ids helpers, widgets, the validation layer, URL-hash helpers, jobs, caches and bounds."""
