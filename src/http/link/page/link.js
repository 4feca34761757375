// The hosted link page without a framework: the page works without this script; with it the
// provider search filters as the user types, and the Close button's "you can close this tab"
// screen closes a window the widget opened.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  document.addEventListener("DOMContentLoaded", function () {
    var input = document.getElementById("q");
    var empty = document.getElementById("empty");
    if (input) {
      var filter = function () {
        var q = input.value.trim().toLowerCase();
        var shown = 0;
        document.querySelectorAll(".group").forEach(function (group) {
          var inGroup = 0;
          group.querySelectorAll("li[data-terms]").forEach(function (li) {
            var match = !q || li.getAttribute("data-terms").indexOf(q) !== -1;
            li.hidden = !match;
            if (match) inGroup++;
          });
          group.hidden = inGroup === 0;
          shown += inGroup;
        });
        if (empty) {
          empty.hidden = shown !== 0;
          empty.textContent = "No provider matches \u201c" + input.value.trim() + "\u201d.";
        }
      };
      input.addEventListener("input", filter);
    }
    var outcome = document.getElementById("outcome");
    if (outcome && outcome.getAttribute("data-tone") === "info" && window.opener) {
      window.close();
    }
  });
})();
