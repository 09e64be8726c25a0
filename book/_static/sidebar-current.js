/* The sidebar shows the page being read: on load its entry (the last `li.current > a` of the
   sidebar's navigation, the deepest) is scrolled to the middle of the sidebar. The theme keeps
   the previous page's sidebar scroll (sessionStorage) and so could leave the entry out of view.
   Only the sidebar scrolls (its scrollTop is set; scrollIntoView would move the page too).
   Nothing happens where the sidebar does not scroll (a narrow window's drawer) or has no
   current entry. Runs after the theme's own restore (its script is deferred; this one waits
   for DOMContentLoaded) and once more on load, unless the reader has scrolled the sidebar. */
(function () {
  "use strict";
  let placed = null; // the scrollTop this script set, or null

  function sidebar() {
    return document.querySelector(".bd-sidebar-primary");
  }

  function centre() {
    const side = sidebar();
    if (!side) return;
    const entries = side.querySelectorAll("nav li.current > a, li.current > a");
    if (!entries.length) return;
    const entry = entries[entries.length - 1];
    if (side.scrollHeight <= side.clientHeight + 1) return; // nothing to scroll
    const box = side.getBoundingClientRect();
    const r = entry.getBoundingClientRect();
    if (!r.height) return; // hidden
    // the entry's middle, in the sidebar's scrolled content, put at the sidebar's middle
    const middle = r.top - box.top + side.scrollTop + r.height / 2;
    const most = side.scrollHeight - side.clientHeight;
    const top = Math.max(0, Math.min(most, Math.round(middle - side.clientHeight / 2)));
    side.scrollTop = top;
    placed = side.scrollTop;
  }

  function again() {
    const side = sidebar();
    // the reader scrolled the sidebar meanwhile: leave it
    if (side && placed !== null && Math.abs(side.scrollTop - placed) > 1) return;
    centre();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", centre);
  } else {
    centre();
  }
  if (document.readyState === "complete") {
    again();
  } else {
    window.addEventListener("load", again);
  }
})();
