/**
 * The service's favicon, a paw print, for the docs page's tab (Swagger UI's own would
 * say "Swagger"). Kept in a module rather than an .svg file so the compiled build and
 * the Docker image carry it without copying assets.
 */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#2f7d4f"/>
<g fill="#fff">
<ellipse cx="9" cy="13" rx="2.6" ry="3.4" transform="rotate(-18 9 13)"/>
<ellipse cx="13.6" cy="8.6" rx="2.6" ry="3.5"/>
<ellipse cx="18.4" cy="8.6" rx="2.6" ry="3.5"/>
<ellipse cx="23" cy="13" rx="2.6" ry="3.4" transform="rotate(18 23 13)"/>
<path d="M16 14.5c-3.6 0-7 4.6-7 7.7 0 2.3 1.9 3.3 3.8 3.3 1.4 0 2.2-.7 3.2-.7s1.8.7 3.2.7c1.9 0 3.8-1 3.8-3.3 0-3.1-3.4-7.7-7-7.7z"/>
</g>
</svg>
`;

/** Where the page links it: Swagger UI's theme files are served under /docs/static/theme/. */
export const FAVICON_FILENAME = 'animal-store.svg';
