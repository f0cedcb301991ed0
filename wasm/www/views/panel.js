// The operation panels' wiring (a form of operation buttons and one output), shared by the views
// that are still such panels. A submit (a click on an operation button, or Enter in a field)
// runs the button's operation; Enter runs the form's default button, the first submit button,
// which is the panel's main operation. `Set up` is a plain button (`type="button"`) so that it
// only ever runs when clicked.

/** A section's content from its markup (the panel's heading, form and output). */
export function panel(section, html) {
  section.innerHTML = html;
}

/** Runs `ops[name]()` for the form's operation buttons, showing each result (or error) in `out`. */
export function wire(form, out, ops, ctx) {
  const run = async (op) => {
    try {
      const value = (await ctx.busy(out, ops[op]())) ?? 'ok';
      out.textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    } catch (e) {
      ctx.fail(out, e);
    }
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const button = ev.submitter ?? form.querySelector('button:not([type="button"])');
    run(button.dataset.op);
  });
  for (const button of form.querySelectorAll('button[type="button"][data-op]')) {
    button.addEventListener('click', () => run(button.dataset.op));
  }
}
