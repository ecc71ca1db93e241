// Live updates: the list, the Loops page (and a request's status) are fetched again every
// second, so an answer or a loop's change elsewhere shows here within 2 s. Without this script every page still works.
(function () {
  var live = document.querySelector("[data-live]");
  if (!live || !window.fetch) return;
  var url = live.getAttribute("data-live");
  var status = live.getAttribute("data-status");
  var last = null;
  function tick() {
    fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (text) {
      if (text === null) return;
      if (status !== null) {
        if (text.trim() !== status) location.reload();
        return;
      }
      // Someone typing a note (or with a note box open) keeps the page as it is for now.
      if (live.querySelector("details[open]") || live.contains(document.activeElement) &&
          /^(TEXTAREA|INPUT)$/.test(document.activeElement.tagName)) return;
      if (text !== last) {
        var next = new DOMParser().parseFromString(text, "text/html").getElementById("list");
        if (next) live.innerHTML = next.innerHTML;
      }
      last = text;
    }).catch(function () {}).then(function () { setTimeout(tick, 1000); });
  }
  setTimeout(tick, 1000);
})();
// A review's Approve stays disabled until "I checked it" is ticked (the form also requires
// it, and the server refuses an Approve without it).
document.querySelectorAll("form.choice input[name=checked]").forEach(function (box) {
  var button = box.form.querySelector("button");
  function sync() { button.disabled = !box.checked; }
  box.addEventListener("change", sync);
  sync();
});
