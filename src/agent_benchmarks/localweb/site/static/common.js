// Shared by every page: the cart counter helper, the optional late modal (fault knob), and
// in a run with --fault the stale-dom watch: when the episode's DOM generation goes past the
// one the page was served with, the page replaces its body with a copy (same content, new
// nodes; form values kept), runs its own scripts again on the copy, and tells the site.
(function () {
  var root = document.documentElement.getAttribute("data-root") || "";
  window.LW = window.LW || {};
  window.LW.root = root;
  window.LW.refreshCart = function () {
    return fetch(root + "/api/cart", { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (cart) {
        var el = document.getElementById("cart-count");
        if (el) { el.textContent = String(cart.count); }
        return cart;
      });
  };
  var lateMs = parseInt(document.documentElement.getAttribute("data-late-modal-ms") || "", 10);
  if (!isNaN(lateMs) && lateMs >= 0) {
    setTimeout(function () {
      if (document.getElementById("late-modal")) { return; }
      var modal = document.createElement("div");
      modal.id = "late-modal";
      modal.className = "overlay";
      modal.setAttribute("role", "dialog");
      modal.setAttribute("aria-modal", "true");
      modal.setAttribute("aria-label", "Newsletter");
      modal.innerHTML = '<div class="box"><h2>Join our newsletter</h2>' +
        "<p>Get 10% off your first order when you subscribe.</p>" +
        '<button type="button" id="late-modal-close">No thanks</button></div>';
      document.body.appendChild(modal);
      document.getElementById("late-modal-close").addEventListener("click", function () {
        modal.remove();
      });
    }, lateMs);
  }
  var served = parseInt(document.documentElement.getAttribute("data-fault-generation") || "", 10);
  if (!isNaN(served) && !window.LW.faultWatch) {
    window.LW.faultWatch = true;
    var seen = served;
    var goStale = function () {
      var old = document.body;
      var fresh = old.cloneNode(true);
      var before = old.querySelectorAll("input, select, textarea");
      var after = fresh.querySelectorAll("input, select, textarea");
      for (var i = 0; i < before.length && i < after.length; i++) {
        after[i].value = before[i].value;
        after[i].checked = before[i].checked;
      }
      document.documentElement.replaceChild(fresh, old);
      var scripts = fresh.querySelectorAll("script[src]");
      for (var j = 0; j < scripts.length; j++) {
        if (scripts[j].src.indexOf("/static/common.js") >= 0) { continue; }
        var again = document.createElement("script");
        again.src = scripts[j].src;
        scripts[j].parentNode.replaceChild(again, scripts[j]);
      }
    };
    var poll = function () {
      fetch(root + "/__fault/dom", { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(function (state) {
          if (state.generation > seen) {
            seen = state.generation;
            goStale();
            return fetch(root + "/__fault/dom?g=" + seen, { method: "POST", credentials: "same-origin" });
          }
        })
        .catch(function () {})
        .then(function () { setTimeout(poll, 100); });
    };
    setTimeout(poll, 100);
  }
})();
