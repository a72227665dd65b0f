# apps/ build fragment: one C file per app, each registers itself with APP().
APP_C += apps/loopnest.c
