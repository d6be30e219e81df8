public class Bootstrap {
    static {
        System.setProperty("sumologic.access.id", "su9O@@L59biWiJu7");
    }
}
