// Progressive enhancement only: every page works without it. No data is ever turned into
// markup here; handlers are attached by selector, never built from data.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // "Edit the text and approve": show the editors of an edit on demand.
  for (const button of document.querySelectorAll("button[data-toggle]")) {
    button.addEventListener("click", () => {
      const target = document.getElementById(button.dataset.toggle);
      if (target) target.classList.toggle("hidden");
    });
  }
  // Progress bars take their width from a data attribute (the CSP forbids inline styles).
  for (const bar of document.querySelectorAll(".progress > div[data-pct]")) {
    const pct = Math.max(0, Math.min(100, Number(bar.dataset.pct) || 0));
    bar.style.width = pct + "%";
  }
});
