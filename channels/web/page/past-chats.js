// This browser's past conversations, kept in localStorage (newest first): "Conversations" lists
// them, each a link to its address, so "New conversation" never strands the one before.

const KEY = 'chatgate.conversations';
const MAX_KEPT = 30;
const TITLE_CHARS = 60;

/** The list over `storage` ({get, set}); `button` toggles `panel`, which lists them. */
export function createPastChats(storage, button, panel, current) {
  const read = () => {
    try {
      const list = JSON.parse(storage.get(KEY) || '[]');
      return Array.isArray(list) ? list.filter((c) => c && typeof c.id === 'string') : [];
    } catch {
      return [];
    }
  };

  /** Records activity in conversation `id`; its first message names it. */
  function note(id, text) {
    const list = read();
    const old = list.find((c) => c.id === id);
    const title = old && old.title ? old.title : String(text || '').trim().slice(0, TITLE_CHARS);
    const kept = [{ id, title, at: Date.now() }, ...list.filter((c) => c.id !== id)].slice(0, MAX_KEPT);
    storage.set(KEY, JSON.stringify(kept));
  }

  function render() {
    const ul = document.createElement('ul');
    for (const c of read()) {
      const li = document.createElement('li');
      const a = document.createElement('a');
      a.href = location.pathname + '?c=' + encodeURIComponent(c.id);
      a.textContent = c.title || c.id;
      if (c.id === current) a.setAttribute('aria-current', 'page');
      const when = document.createElement('span');
      when.className = 'when';
      when.textContent = new Date(c.at).toLocaleString([], { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
      li.append(a, when);
      ul.appendChild(li);
    }
    if (!ul.firstChild) {
      const li = document.createElement('li');
      li.textContent = 'No earlier conversations in this browser.';
      ul.appendChild(li);
    }
    panel.replaceChildren(ul);
  }

  button.addEventListener('click', () => {
    if (panel.hidden) render();
    panel.hidden = !panel.hidden;
    button.setAttribute('aria-expanded', String(!panel.hidden));
  });
  return { note };
}
