// sqlx::migrate! embeds migrations/postgres at compile time, but cargo does not
// know to rebuild when a migration is added; this tells it (sqlx's own advice).
fn main() {
    println!("cargo:rerun-if-changed=../../migrations/postgres");
}
