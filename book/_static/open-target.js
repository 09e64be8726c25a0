// A link to a collapsed block (a dropdown with a :name:, e.g. an excerpt's "full source below"
// pointing to the chapter's "Full source of this chapter's functions") opens the block it leads
// to, so that the reader lands on its content, not on a closed bar.
(function () {
  function openTarget(id) {
    var el = id ? document.getElementById(id) : null;
    for (var a = el; a; a = a.parentElement) {
      if (a.tagName === "DETAILS") a.open = true;
    }
  }
  function fromHash() {
    openTarget(decodeURIComponent(window.location.hash.slice(1)));
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest('a[href^="#"]') : null;
    if (link) openTarget(decodeURIComponent(link.getAttribute("href").slice(1)));
  });
  window.addEventListener("hashchange", fromHash);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", fromHash);
  } else {
    fromHash();
  }
})();
