import { randomInt } from "node:crypto";

/** One contact of the fixture web app. */
export interface Contact {
  name: string;
  email: string;
}

const FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Margaret", "Niklaus"];
const LAST = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Hamilton", "Wirth"];

/** Contacts made up fresh for each run, so a replay cannot pass by remembering them. */
export function randomContacts(count = 3 + randomInt(4)): Contact[] {
  return Array.from({ length: count }, (_, i) => {
    const first = FIRST[randomInt(FIRST.length)] as string;
    const last = LAST[randomInt(LAST.length)] as string;
    return { name: `${first} ${last}`, email: `${first}.${last}.${i}${randomInt(1000)}@example.test`.toLowerCase() };
  });
}

/**
 * A one-page contacts app: the list is hidden until "Show contacts" is
 * clicked, so an agent must act on the page, not only read it.
 */
export function contactsPage(contacts: readonly Contact[]): string {
  const items = contacts.map((c) => `<li>contact: ${c.name}, ${c.email};</li>`).join("");
  return `<!doctype html><title>Contacts</title><h1>Contacts</h1>
<button id="show">Show contacts</button><ul id="list" hidden>${items}</ul>
<script>document.getElementById("show").addEventListener("click", () => {
  document.getElementById("list").hidden = false;
  document.getElementById("show").textContent = "Contacts shown";
});</script>`;
}

/** Reads the contacts back out of page text, the way the scripted model does. */
export function contactsInText(text: string): Contact[] {
  return [...text.matchAll(/contact: ([^,]+), ([^;\s]+);/g)].map((m) => ({
    name: m[1] as string,
    email: m[2] as string,
  }));
}

export function contactsCsv(contacts: readonly Contact[]): string {
  return `name,email\n${contacts.map((c) => `${c.name},${c.email}`).join("\n")}\n`;
}
