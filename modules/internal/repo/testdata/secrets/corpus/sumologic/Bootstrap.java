public class Bootstrap {
    static {
        System.setProperty("sumologic.access.id", "sug5@@XpdpaoxtOH");
    }
}
