// Every page of the console is this one document; the path picks the module that fills it.
const path = location.pathname;
if (path === '/admin') import('./admin.js');
else if (path === '/standings') import('./standings.js');
else if (path.startsWith('/accounts/')) import('./profile.js');
else if (path.startsWith('/lobbies/')) import('./lobby.js');
else import('./lobbies.js');
