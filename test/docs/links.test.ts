import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';

/*
 * The README and docs/ as a newcomer follows them: every link leads somewhere, every npm
 * script named exists, every flag given to one is one it takes. (Running the README's quick
 * start is test/long/quickstart.test.ts; every command's --help, test/cli/help.test.ts.)
 */

const pages = ['README.md', ...readdirSync(path.join(projectRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'deploy/kubernetes/README.md'];
const text = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');
const scripts = (JSON.parse(text('package.json')) as { scripts: Record<string, string> }).scripts;

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\s-]/g, '').replace(/\s/g, '-');
const anchors = (file: string) => new Set([...text(file).matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1]!)));

describe('the README', () => {
  it('is a front door: about 150 lines', () => {
    expect(text('README.md').split('\n').length).toBeLessThanOrEqual(160);
  });

  it('has the quick-start blocks the quick-start test runs', () => {
    expect(text('README.md')).toMatch(/<!-- quickstart:server[^>]*-->\n```sh\nnpm ci && npm start\n```/);
    expect(text('README.md')).toMatch(/<!-- quickstart:client[^>]*-->\n```sh\nKEY=\$\(npm run --silent apikey -- create/);
  });
});

describe('docs/CONFIGURATION.md', () => {
  it('has every variable the service reads', () => {
    const documented = text('docs/CONFIGURATION.md');
    expect(CONFIG_VARIABLES.filter((name) => !documented.includes(`\`${name}\``))).toEqual([]);
  });
});

describe.each(pages)('%s', (page) => {
  const links = [...text(page).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^(https?:|mailto:)/.test(l));

  it('links only to files and headings that exist', () => {
    const broken = links.filter((link) => {
      const [target = '', anchor] = link.split('#');
      const file = target ? path.posix.normalize(path.posix.join(path.posix.dirname(page), target)) : page;
      if (!existsSync(path.join(projectRoot, file))) return true;
      return anchor !== undefined && file.endsWith('.md') && !anchors(file).has(anchor);
    });
    expect(broken).toEqual([]);
  });

  it('names only npm scripts that exist, with flags they take', () => {
    const uses = [...text(page).matchAll(/npm (?:run (?:--silent )?([\w:-]+)|(test|start))(?: -- ([^`|\n]*))?/g)];
    const wrong: string[] = [];
    for (const [whole, run, builtIn, args] of uses) {
      const name = (run ?? builtIn)!;
      if (!(name in scripts)) {
        wrong.push(`${whole}: no such script`);
        continue;
      }
      // The script's own file (its usage text) names every flag it takes.
      const file = /(?:scripts|src|bench|test)\/\S+\.(?:ts|sh)/.exec(scripts[name]!)?.[0];
      for (const flag of (args ?? '').match(/--[a-z][\w-]*/g) ?? []) {
        if (!file || !text(file).includes(flag)) wrong.push(`${whole}: ${name} takes no ${flag}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
