public class Bootstrap {
    static {
        System.setProperty("sumologic.access.id", "suDb@@Jw97o9WVo0");
    }
}
