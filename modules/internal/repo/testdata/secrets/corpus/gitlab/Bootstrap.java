public class Bootstrap {
    static {
        System.setProperty("gitlab.feed.token", "glft@@-skr3o29x60di0ajbe2yz");
        System.setProperty("gitlab.scim.token", "glso@@at-azjaz4psqtghmh48tc6c");
    }
}
