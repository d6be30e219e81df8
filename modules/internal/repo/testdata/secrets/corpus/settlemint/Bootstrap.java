public class Bootstrap {
    static {
        System.setProperty("settlemint.personal.access.token", "sm_p@@at_1o8g03y0qi08h3lx");
    }
}
