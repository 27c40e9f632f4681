// tessera: the command-line program. Subcommands live one per file in this folder.
int main() { return 0; }
