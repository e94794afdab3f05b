// The server-posted forms (sign-up and log-in, /account, the ranked queue, an appeal on /me) come
// back after a refused submit with the error next to its field (`aria-invalid="true"`): the
// keyboard focus goes to that field, not to the top of the page. (The pages allow no inline
// script: this file is loaded by every page, and does nothing where no field is invalid.)

const invalid = document.querySelector('main form [aria-invalid="true"]');
if (invalid) invalid.focus();
