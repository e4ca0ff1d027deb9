/* Links made before the views became Dash pages keep opening the same view with the same state.

   The abstract view kept its state in the query string and the others in the hash, chosen by
   `view=`; now each page owns the hash of its own path:
     /?<query>                 → /#<query>
     /#view=model&<pairs>      → /model#<pairs>       (the search view's s.* pairs left out)
     /#view=search&s.x=1&…     → /search#x=1&…
   This runs before Dash's renderer reads the URL, and rewrites it in place: no reload, no new
   history entry. The pairs are kept as written (not decoded and encoded again). */
(function () {
  var prefix = "/";
  try {
    prefix = JSON.parse(document.getElementById("_dash-config").textContent).requests_pathname_prefix || "/";
  } catch (e) {
    /* no config: served at the root */
  }
  var here = window.location;
  if (here.pathname !== prefix && here.pathname + "/" !== prefix) {
    return; // links to /model or /search are new ones already
  }
  var query = here.search.replace(/^\?/, "");
  var pairs = here.hash.replace(/^#/, "").split("&").filter(Boolean);
  var key = function (pair) {
    return decodeURIComponent(pair.split("=")[0]);
  };
  var view = null;
  pairs.forEach(function (pair) {
    if (key(pair) === "view") {
      view = decodeURIComponent((pair.split("=")[1] || "").replace(/\+/g, " "));
    }
  });
  if (!query && view === null) {
    return;
  }
  var path = prefix;
  var kept = query ? query.split("&").filter(Boolean) : [];
  if (view === "model") {
    path = prefix + "model";
    kept = pairs.filter(function (pair) {
      return key(pair) !== "view" && key(pair).indexOf("s.") !== 0;
    });
  } else if (view === "search") {
    path = prefix + "search";
    kept = pairs
      .filter(function (pair) {
        return key(pair).indexOf("s.") === 0;
      })
      .map(function (pair) {
        return pair.replace(/^s(\.|%2E)/i, "");
      });
  }
  window.history.replaceState(window.history.state, "", path + (kept.length ? "#" + kept.join("&") : ""));
})();
