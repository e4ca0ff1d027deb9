/* Browser history and number boxes.

   dcc.Location (Dash 4.4.1) writes every URL change with history.pushState, so Back stepped
   through every slider move. On the abstract page (at the app's root), a change that keeps its
   schedule, mode, comparison, compare view (charts or sweep) and uploaded order (a slider, a
   number box, the stage table) now replaces the current entry instead: Back goes to the previous
   view (another schedule or mode), not the previous slider position. The first write of a bare
   URL (the page's defaults) replaces it too. A change of page (a link in the header, a search row
   opened) and every move of the other pages are pushed as before.

   Dash 4's slider number box commits on blur; Enter commits it too (blur, then focus again). */
(function () {
  var KEEP = ["mode", "schedule", "compare", "order", "show"]; // "show": compare mode's charts or sweep
  var push = window.history.pushState;
  var root = "/";
  try {
    root = JSON.parse(document.getElementById("_dash-config").textContent).requests_pathname_prefix || "/";
  } catch (e) {
    /* no config: served at the root */
  }

  function pairs(hash) {
    return new URLSearchParams(hash.replace(/^#/, ""));
  }

  function sameView(next) {
    var here = window.location;
    if (next.pathname !== here.pathname || next.search !== here.search || here.pathname !== root) {
      return false;
    }
    if (!here.hash) {
      return true;
    }
    var a = pairs(here.hash);
    var b = pairs(next.hash);
    return KEEP.every(function (key) {
      return a.get(key) === b.get(key);
    });
  }

  window.history.pushState = function (state, title, url) {
    try {
      if (url !== undefined && url !== null && sameView(new URL(String(url), window.location.href))) {
        return window.history.replaceState(state, title, url);
      }
    } catch (e) {
      /* an unreadable URL: push it as Dash asked */
    }
    return push.apply(window.history, arguments);
  };

  document.addEventListener("keydown", function (event) {
    var box = event.target;
    if (event.key !== "Enter" || !box || !box.closest || !box.closest(".dash-slider-container")) {
      return;
    }
    if (box.tagName === "INPUT") {
      box.blur();
      box.focus();
    }
  });
})();
